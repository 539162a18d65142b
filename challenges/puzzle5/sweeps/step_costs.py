"""Puzzle 5 on one CUDA GPU: what one decode step's parts cost, to see which one the puzzle is about.

    PYTHONPATH=. python challenges/puzzle5/sweeps/step_costs.py [--reps 50]

The H100 grades (MEASUREMENTS.md) found the fix that writes the cache in place only 1.4x faster than
torch.cat's copies: the attention kernel, not the copies, was most of a step. Printed for the shortest
and the longest cache of a call (PROMPT and PROMPT + STEPS tokens): the two torch.cat copies of a step;
scaled_dot_product_attention over fp32 slices of a preallocated cache (what the reference runs), over
bf16 ones, and with each backend alone; and the same attention written as two batched matmuls. Each is
the median of --reps CUDA-event timings after a warm-up, its bytes per microsecond beside it.
"""

from __future__ import annotations

import argparse
import statistics

import torch
import torch.nn.functional as F
from torch.nn.attention import SDPBackend, sdpa_kernel

BATCH, HIDDEN, HEADS, PROMPT, STEPS = 64, 512, 8, 512, 128


def timed_us(fn, reps: int) -> float:
    for _ in range(3):
        fn()
    times = []
    for _ in range(reps):
        start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        start.record()
        fn()
        end.record()
        end.synchronize()
        times.append(start.elapsed_time(end) * 1e3)
    return statistics.median(times)


def heads(x: torch.Tensor) -> torch.Tensor:
    b, t, d = x.shape
    return x.view(b, t, HEADS, d // HEADS).transpose(1, 2)


def matmul_attention(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor) -> torch.Tensor:
    scores = (heads(q) @ heads(k).transpose(-1, -2)) * (HIDDEN // HEADS) ** -0.5
    return scores.softmax(-1) @ heads(v)


def report(name: str, us: float, nbytes: int) -> None:
    print(f"  {name:34} {us:9.1f} us  {nbytes / us / 1e3:7.2f} GB/ms", flush=True)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--reps", type=int, default=50)
    reps = parser.parse_args().reps
    for t in (PROMPT, PROMPT + STEPS):
        print(f"cache of {t} tokens, {BATCH} sequences, hidden {HIDDEN}:")
        for dtype in (torch.float32, torch.bfloat16):
            size = dtype.itemsize
            cache = torch.randn(BATCH, PROMPT + STEPS, HIDDEN, device="cuda", dtype=dtype)
            k, v = cache[:, :t], cache[:, :t].clone()
            kv_bytes = 2 * BATCH * t * HIDDEN * size
            q = torch.randn(BATCH, 1, HIDDEN, device="cuda", dtype=dtype)
            new = torch.randn(BATCH, 1, HIDDEN, device="cuda", dtype=dtype)
            tag = str(dtype).removeprefix("torch.")
            report(f"torch.cat of k and v ({tag})", timed_us(lambda: (torch.cat([k, new], 1), torch.cat([v, new], 1)),
                                                             reps), 2 * kv_bytes)
            report(f"sdpa, default ({tag})",
                   timed_us(lambda: F.scaled_dot_product_attention(heads(q), heads(k), heads(v)), reps), kv_bytes)
            for backend in (SDPBackend.FLASH_ATTENTION, SDPBackend.EFFICIENT_ATTENTION, SDPBackend.MATH):
                try:
                    with sdpa_kernel(backend):
                        us = timed_us(lambda: F.scaled_dot_product_attention(heads(q), heads(k), heads(v)), reps)
                except RuntimeError as error:  # a backend that does not take this dtype or layout
                    print(f"  sdpa, {backend.name.lower()} ({tag}): not available: {str(error).splitlines()[0][:80]}")
                    continue
                report(f"sdpa, {backend.name.lower()} ({tag})", us, kv_bytes)
            report(f"two matmuls ({tag})", timed_us(lambda: matmul_attention(q, k, v), reps), kv_bytes)


if __name__ == "__main__":
    main()
