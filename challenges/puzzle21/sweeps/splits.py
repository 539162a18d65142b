"""Puzzle 21 on one CUDA GPU: the projection's GPU time at each count of shares of the features.

    PYTHONPATH=. python challenges/puzzle21/sweeps/splits.py [--reps 21]

For each SPLITS that divides the features into whole slabs, the baseline's kernel (partial sums through DRAM, then
torch's sum) and alternatives/atomic_splits' (each share added into out in place) run on the spec's sizes, and
this prints each one's GPU time a call (CUDA events around the call alone, L2 flushed before it; the median of
--reps), with the grid's blocks and the partial sums' bytes beside them; torch's matmul last, for scale.
"""

from __future__ import annotations

import argparse
import statistics
from pathlib import Path

import torch

from tutor.harness.loading import load_module

FOLDER = Path(__file__).parents[1]


def gpu_ms(call, reps: int) -> float:
    """Median GPU ms a call: two warm calls, then each timed call after a write that evicts L2."""
    flush = torch.empty(256 * 2**20, dtype=torch.uint8, device="cuda")
    for _ in range(2):
        call()
    times = []
    for _ in range(reps):
        flush.zero_()
        began, ended = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        began.record()
        call()
        ended.record()
        ended.synchronize()
        times.append(began.elapsed_time(ended))
    return statistics.median(times)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--reps", type=int, default=21)
    reps = parser.parse_args().reps
    spec = load_module(FOLDER / "spec.py", "p21_spec", ())
    baseline = load_module(FOLDER / "baseline.py", "p21_baseline", ())
    atomic = load_module(FOLDER / "alternatives" / "atomic_splits.py", "p21_atomic", ())
    w, x = spec.make_weights(1, "cuda")["w"], spec.make_input(1, "cuda")
    kernels = {"partials": baseline.prepare({"w": w}, "cuda")["kernel"],
               "atomics": atomic.prepare({"w": w}, "cuda")["kernel"]}
    tile = 64
    print(f"{spec.TOKENS} tokens x {spec.FEATURES} features -> {spec.OUTPUTS} outputs, fp32, on "
          f"{torch.cuda.get_device_name()} ({torch.cuda.get_device_properties(0).multi_processor_count} SMs)")
    print(f"{'splits':>6} {'blocks':>7} {'partials MB':>11} {'partials+sum ms':>15} {'atomics ms':>10}")
    splits = 1
    while spec.FEATURES % (splits * 16) == 0:
        partials = gpu_ms(lambda: kernels["partials"].run(x, w, splits).sum(0), reps)
        atomics = gpu_ms(lambda: kernels["atomics"].run(x, w, splits), reps)
        blocks = (spec.OUTPUTS // tile) * (spec.TOKENS // tile) * splits
        print(f"{splits:6} {blocks:7} {splits * spec.TOKENS * spec.OUTPUTS * 4 / 2**20:11.0f} "
              f"{partials:15.4f} {atomics:10.4f}", flush=True)
        splits *= 2
    print(f"torch.matmul: {gpu_ms(lambda: x @ w, reps):.4f} ms")


if __name__ == "__main__":
    main()
