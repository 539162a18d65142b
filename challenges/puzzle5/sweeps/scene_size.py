"""Puzzle 5 on one CUDA GPU: how large the scene must be for the copies, not the host, to set a step's time.

    PYTHONPATH=. python challenges/puzzle5/sweeps/scene_size.py [--reps 7]

The bf16 grades on the H100 (MEASUREMENTS.md) found the baseline host-bound at 64 sequences of 512-640
tokens: about 300 us of Python and launches a step against 100 us of kernels, so writing the cache in
place gained nothing until the loop was graphed. For each scene size (sequences, hidden, prompt, steps)
this runs the baseline, alternatives/in_place and the reference (in place, one CUDA graph) as they are,
their module constants set to the size, and prints each one's time a call (host included, the median of
--reps after two warm-up calls) and peak memory, with the cache's bytes beside them.
"""

from __future__ import annotations

import argparse
import statistics
import time
from pathlib import Path

import torch

from tutor.harness.loading import load_module

FOLDER = Path(__file__).parents[1]
SIZES = [(64, 512, 512, 128), (32, 1024, 4096, 64), (32, 1024, 4096, 32), (16, 1024, 8192, 32),
         (32, 1024, 8192, 32), (64, 1024, 4096, 32)]
STYLES = {"baseline": "baseline.py", "in_place": "alternatives/in_place.py", "reference": "solution/workload.py"}


def sized(relative: str, size: tuple) -> object:
    module = load_module(FOLDER / relative, f"p5_{relative.replace('/', '_')}_{'_'.join(map(str, size))}", ())
    for name, value in zip(("BATCH", "HIDDEN", "PROMPT", "STEPS"), size):
        if hasattr(module, name):
            setattr(module, name, value)
    return module


def timed_ms(call, reps: int) -> float:
    """Median wall ms a call, host included, each call from an idle GPU and waited for."""
    for _ in range(2):
        call()
    walls = []
    for _ in range(reps):
        torch.cuda.synchronize()
        began = time.perf_counter()
        call()
        torch.cuda.synchronize()
        walls.append((time.perf_counter() - began) * 1e3)
    return statistics.median(walls)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--reps", type=int, default=7)
    reps = parser.parse_args().reps
    for size in SIZES:
        batch, hidden, prompt, steps = size
        spec = sized("spec.py", size)
        cache_mb = 2 * batch * (prompt + steps) * hidden * 2 / 1e6
        print(f"{batch} sequences, hidden {hidden}, prompt {prompt}, {steps} steps: k+v cache {cache_mb:.0f} MB at "
              f"its longest", flush=True)
        weights, x = spec.make_weights(1, "cuda"), spec.make_input(1, "cuda")
        times = {}
        for style, relative in STYLES.items():
            module = sized(relative, size)
            torch.cuda.reset_peak_memory_stats()
            state = weights if style == "baseline" else module.prepare(weights, "cuda")
            wall = timed_ms(lambda: module.forward(state, x), reps)
            times[style] = wall
            print(f"  {style:10} {wall:8.2f} ms a call  {wall / steps * 1e3:7.1f} us a step  "
                  f"peak {torch.cuda.max_memory_allocated() / 1e9:5.2f} GB  vs baseline "
                  f"{times['baseline'] / wall:5.2f}x", flush=True)
            del state
            torch.cuda.empty_cache()


if __name__ == "__main__":
    main()
