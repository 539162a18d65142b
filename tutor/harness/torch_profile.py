"""Record one PyTorch-profiler trace of a workload (runs inside the harness subprocess).

Every forward() is wrapped in an `infprof:iter` range so trace analysis can
count per-iteration work; the host waits for the GPU only once, at the end, so
idle gaps in the trace are the workload's own, not ours.
"""

from __future__ import annotations

from contextlib import contextmanager
from pathlib import Path
from typing import Callable

from tutor.protocol import TORCH_ITER_RANGE


def profile_iterations(call: Callable[[int], object], iterations: int, trace_path: Path) -> dict:
    """Profile `call(i)` for i in range(iterations); write a Chrome trace; return memory stats."""
    from torch.profiler import record_function

    with profiled(trace_path) as memory:
        for i in range(iterations):
            with record_function(TORCH_ITER_RANGE):
                call(i)
    return memory


@contextmanager
def profiled(trace_path: Path):
    """Everything inside under the profiler, the GPU waited for once at the end; the trace written to
    `trace_path`, and the dict yielded filled with memory stats (a serving replay marks its own iterations:
    each step)."""
    import torch
    from torch.profiler import ProfilerActivity, profile

    cuda = torch.cuda.is_available()
    activities = [ProfilerActivity.CPU] + ([ProfilerActivity.CUDA] if cuda else [])
    if cuda:
        torch.cuda.synchronize()
        torch.cuda.reset_peak_memory_stats()
    memory: dict = {}
    with profile(activities=activities, profile_memory=True, record_shapes=False) as prof:
        yield memory
        if cuda:
            torch.cuda.synchronize()
    prof.export_chrome_trace(str(trace_path))
    if cuda:
        memory.update(peak_allocated_mb=torch.cuda.max_memory_allocated() / 2**20,
                      peak_reserved_mb=torch.cuda.max_memory_reserved() / 2**20)
