"""Record one PyTorch-profiler trace of a workload (runs inside the harness subprocess).

Every forward() is wrapped in an `infprof:iter` range so trace analysis can
count per-iteration work; the host waits for the GPU only once, at the end, so
idle gaps in the trace are the workload's own, not ours.
"""

from __future__ import annotations

from pathlib import Path
from typing import Callable

from tutor.protocol import TORCH_ITER_RANGE


def profile_iterations(call: Callable[[int], object], iterations: int, trace_path: Path) -> dict:
    """Profile `call(i)` for i in range(iterations); write a Chrome trace; return memory stats."""
    import torch
    from torch.profiler import ProfilerActivity, profile, record_function

    cuda = torch.cuda.is_available()
    activities = [ProfilerActivity.CPU] + ([ProfilerActivity.CUDA] if cuda else [])
    if cuda:
        torch.cuda.synchronize()
        torch.cuda.reset_peak_memory_stats()
    with profile(activities=activities, profile_memory=True, record_shapes=False) as prof:
        for i in range(iterations):
            with record_function(TORCH_ITER_RANGE):
                call(i)
        if cuda:
            torch.cuda.synchronize()
    prof.export_chrome_trace(str(trace_path))
    if not cuda:
        return {}
    return {
        "peak_allocated_mb": torch.cuda.max_memory_allocated() / 2**20,
        "peak_reserved_mb": torch.cuda.max_memory_reserved() / 2**20,
    }
