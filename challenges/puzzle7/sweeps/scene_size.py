"""Puzzle 7 on one CUDA GPU: each style's time a call by scene size and by torch's CPU thread count, before the
tiers are set.

    PYTHONPATH=. python challenges/puzzle7/sweeps/scene_size.py [--reps 9]

In a child forked after `import torch`, as the warm harness forks. For each size (rows a batch, hidden width)
the spec's constants are set and every style runs as it is: the baseline (pageable copies), the comparator
pinned_one_stream, the reference, and both alternatives. Printed: each one's wall time a call (host included,
the median of --reps after three warm-up calls), its speed-up over the baseline and over pinned_one_stream,
and its relative L2 error against the baseline; then the same at one torch thread. The first scene failed here:
its fix hung on a host memcpy whose rate followed torch's thread count (MEASUREMENTS.md). These styles make
no host memcpy, so the columns should agree across thread counts.
"""

from __future__ import annotations

import argparse
import os
import statistics
import time
from pathlib import Path

import torch

from tutor.harness.loading import load_module

FOLDER = Path(__file__).parents[1]
SIZES = [(2048, 1024), (4096, 1024), (4096, 2048), (8192, 1024)]
STYLES = {"baseline": "baseline.py", "pinned_one_stream": "pinned_one_stream.py", "reference": "solution/workload.py",
          "copy_at_end": "alternatives/copy_at_end.py", "compiled_overlap": "alternatives/compiled_overlap.py"}


def timed_ms(call, reps: int) -> float:
    """Median wall ms a call, host included, each call from an idle GPU and waited for."""
    for _ in range(3):
        call()
    walls = []
    for _ in range(reps):
        torch.cuda.synchronize()
        began = time.perf_counter()
        call()
        torch.cuda.synchronize()
        walls.append((time.perf_counter() - began) * 1e3)
    return statistics.median(walls)


def sweep(reps: int) -> None:
    for rows, hidden in SIZES:
        spec = load_module(FOLDER / "spec.py", f"p7_spec_{rows}_{hidden}", ())
        spec.ROWS, spec.HIDDEN = rows, hidden
        weights, x = spec.make_weights(1, "cuda"), spec.make_input(1, "cuda")
        mb = spec.BATCHES * rows * spec.DIM * 4 / 1e6
        print(f"  {spec.BATCHES} x {rows} rows, hidden {hidden}: {mb:.0f} MB back to the host a call", flush=True)
        times, expected = {}, None
        for style, relative in STYLES.items():
            module = load_module(FOLDER / relative, f"p7_{style}", ())
            state = module.prepare(weights, "cuda")
            got = module.forward(state, x)
            expected = got if expected is None else expected
            error = float((got - expected).norm() / expected.norm())
            times[style] = timed_ms(lambda: module.forward(state, x), reps)
            print(f"    {style:18} {times[style]:8.2f} ms  vs baseline {times['baseline'] / times[style]:6.2f}x  "
                  f"vs pinned_one_stream {times.get('pinned_one_stream', times[style]) / times[style]:5.2f}x  "
                  f"error {error:.1e}  on the host: {got.device.type == 'cpu'}", flush=True)
            del state, got
        torch.cuda.empty_cache()


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--reps", type=int, default=9)
    reps = parser.parse_args().reps
    print(f"cpus {os.cpu_count()}, torch threads {torch.get_num_threads()}", flush=True)
    pid = os.fork()  # before CUDA is initialised, as the warm harness forks
    if pid == 0:
        for threads in dict.fromkeys((torch.get_num_threads(), 1)):
            torch.set_num_threads(threads)
            print(f"{threads} torch threads", flush=True)
            sweep(reps)
        os._exit(0)
    os.waitpid(pid, 0)


if __name__ == "__main__":
    main()
