"""What the multi-GPU puzzles' sweeps share: a call timed on every rank in step, a call's GPU time by kind of
kernel in one rank, and the slowest rank's median over calls. Run inside a rank of tutor.harness.ranks."""

from __future__ import annotations

import statistics
import time

WARM_CALLS = 3  # NCCL's connections, cuBLAS's choices for new shapes


def timed_calls_ms(forward, calls: int) -> list[float]:
    """Each of `calls` calls' time on this rank, the ranks lined up before each and the device drained after it."""
    import torch
    import torch.distributed as dist

    on_gpu, times = dist.get_backend() == "nccl", []
    for n in range(calls + WARM_CALLS):
        dist.barrier()
        if on_gpu:
            torch.cuda.synchronize()
        t0 = time.perf_counter()
        forward()
        if on_gpu:
            torch.cuda.synchronize()
        if n >= WARM_CALLS:
            times.append((time.perf_counter() - t0) * 1e3)
    return times


def kind_of(kernel: str) -> str:
    name = kernel.lower()
    if "nccl" in name:
        return "nccl"
    return "matmul" if any(k in name for k in ("gemm", "nvjet", "xmma", "cutlass")) else "other"


def kernel_ms(forward, on_gpu: bool, calls: int = 3) -> dict:
    """This rank's GPU time a call by kind of kernel (matmuls, NCCL's, the rest), from torch.profiler."""
    import torch
    from torch.profiler import ProfilerActivity, profile

    with profile(activities=[ProfilerActivity.CUDA if on_gpu else ProfilerActivity.CPU]) as prof:
        for _ in range(calls):
            forward()
        if on_gpu:
            torch.cuda.synchronize()
    totals = {"matmul": 0.0, "nccl": 0.0, "other": 0.0}
    for event in prof.events():
        if event.device_type == torch.autograd.DeviceType.CUDA:
            totals[kind_of(event.name)] += event.device_time / 1e3 / calls
    return totals


def slowest_median_ms(times_by_rank: list[list[float]]) -> float:
    """A call lasts until its slowest rank is done: the maximum over ranks, call by call, then the median."""
    return statistics.median(max(call) for call in zip(*times_by_rank))
