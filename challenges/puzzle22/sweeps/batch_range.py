"""Puzzle 22 on one CUDA GPU: what a call costs the host and the GPU at each largest batch a step can hold.

    PYTHONPATH=. python challenges/puzzle22/sweeps/batch_range.py [--max-batch 64 128 256] [--calls 30]

For each largest batch, calls of spec.STEPS steps (each step's rows drawn from 1..that batch) run through: eager
(what the baseline runs for the sizes past its eighth), torch.compile's default (the reference), 4 padded buckets
under dynamic=False (alternatives/padded_buckets, buckets scaled to the range) and alternatives/triton_rows. Each
prints its wall ms a call back to back (the host's pace, synchronised once at the end) and its GPU ms a call (the
same calls queued behind a sleeping kernel, so the GPU runs them back to back whatever the host's pace).
"""

from __future__ import annotations

import argparse
import statistics
import time
from pathlib import Path

import torch

from tutor.harness.loading import load_module

FOLDER = Path(__file__).parents[1]


def wall_ms(forward, calls: list) -> float:
    torch.cuda.synchronize()
    began = time.perf_counter()
    for steps in calls:
        forward(steps)
    torch.cuda.synchronize()
    return (time.perf_counter() - began) * 1e3 / len(calls)


def gpu_ms(forward, calls: list) -> float:
    """The calls' GPU time: queued behind a kernel that sleeps long enough for the host to enqueue them all."""
    began, ended = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    torch.cuda.synchronize()
    torch.cuda._sleep(int(2e9))  # about a second at 1.98 GHz
    began.record()
    for steps in calls:
        forward(steps)
    ended.record()
    ended.synchronize()
    return began.elapsed_time(ended) / len(calls)


def styles(spec, bias: torch.Tensor, max_batch: int) -> dict:
    baseline = load_module(FOLDER / "baseline.py", "p22_baseline", ())
    padded = load_module(FOLDER / "alternatives" / "padded_buckets.py", "p22_padded", ())
    padded.BUCKETS = tuple(max_batch // d for d in (8, 4, 2, 1))
    triton_rows = load_module(FOLDER / "alternatives" / "triton_rows.py", "p22_triton", ())
    dynamic = torch.compile(baseline.log_probs)
    static = torch.compile(padded.log_probs, dynamic=False)  # a code object of its own: dynamo caches by code

    def each(process):
        return lambda steps: torch.cat([process(l, t, bias) for l, t in steps])

    return {"eager": each(baseline.log_probs), "compiled (default)": each(dynamic),
            "padded buckets": lambda steps: torch.cat([static(*padded.padded(l, t), bias)[:l.shape[0]]
                                                       for l, t in steps]),
            "triton_rows": lambda steps: triton_rows.forward({"bias": bias}, steps)}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--max-batch", type=int, nargs="+", default=[64, 128, 256])
    parser.add_argument("--calls", type=int, default=30)
    args = parser.parse_args()
    spec = load_module(FOLDER / "spec.py", "p22_spec", ())
    bias = spec.make_weights(0, "cuda")["bias"]
    torch._dynamo.config.recompile_limit = 64
    print(f"{torch.cuda.get_device_name()}; {spec.STEPS} steps a call, {args.calls} calls")
    for max_batch in args.max_batch:
        spec.MAX_BATCH = max_batch
        calls = [spec.make_input(seed, "cuda") for seed in range(args.calls)]
        rows = statistics.mean(sum(l.shape[0] for l, _ in steps) for steps in calls)
        print(f"largest batch {max_batch}: {rows:.0f} rows a call on average")
        with torch.inference_mode():
            for name, forward in styles(spec, bias, max_batch).items():
                for steps in calls[:3] + [spec.make_input(1000 + s, "cuda") for s in range(8)]:
                    forward(steps)  # compiles, and the padded sizes
                wall, gpu = statistics.median(wall_ms(forward, calls) for _ in range(3)), gpu_ms(forward, calls)
                print(f"  {name:20s} wall {wall:7.3f} ms a call   GPU {gpu:7.3f} ms a call   "
                      f"({'host' if wall > 1.1 * gpu else 'GPU'}-bound)", flush=True)


if __name__ == "__main__":
    main()
