"""Record one PyTorch-profiler trace of a workload (runs inside the harness subprocess).

Every forward() is wrapped in an `infprof:iter` range so trace analysis can
count per-iteration work; the host waits for the GPU only once, at the end, so
idle gaps in the trace are the workload's own, not ours.
"""

from __future__ import annotations

from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable

from tutor.protocol import TORCH_ITER_RANGE


def profile_iterations(call: Callable[[int], object], iterations: int, trace_path: Path) -> dict:
    """Profile `call(i)` for i in range(iterations); write a Chrome trace; return memory stats."""
    from torch.profiler import record_function

    with profiled(trace_path) as profiling:
        for i in range(iterations):
            with record_function(TORCH_ITER_RANGE):
                call(i)
    return profiling.memory


class WindowNeverOpened(Exception):
    """A profiled block with a window ended before the window's first step: nothing was recorded."""


@dataclass
class Profiling:
    """What a profiled block gets: `step()` to call after each of its steps when recording a window of
    them, and the memory stats, filled when the block ends."""
    step: Callable[[], None] = lambda: None
    memory: dict = field(default_factory=dict)


@contextmanager
def profiled(trace_path: Path, window: tuple[int, int] | None = None):
    """Everything inside under the profiler, the GPU waited for once at the end; the trace written to
    `trace_path`, and the yielded Profiling's memory filled with memory stats.

    With `window` (skip, active), only steps skip to skip + active are recorded, the caller calling the
    Profiling's step() after each (a serving replay: its whole replay in a trace ran to 55 MB). The block
    must run past `skip` steps, or there is nothing to write."""
    import torch
    from torch.profiler import ProfilerActivity, profile, schedule

    cuda = torch.cuda.is_available()
    activities = [ProfilerActivity.CPU] + ([ProfilerActivity.CUDA] if cuda else [])
    if cuda:
        torch.cuda.synchronize()
        torch.cuda.reset_peak_memory_stats()
    profiling = Profiling()
    # Recording starts a step early (its warm-up), so the profiler's own start-up stays out of the window.
    steps = {} if window is None else {"schedule": schedule(skip_first=max(0, window[0] - 1), wait=0, warmup=1,
                                                            active=window[1], repeat=1)}
    with profile(activities=activities, profile_memory=True, record_shapes=False, **steps) as prof:
        if window is not None:
            profiling.step = prof.step
        yield profiling
        if cuda:
            torch.cuda.synchronize()
    if prof.profiler is None:  # a window never reached: the profiler never started
        raise WindowNeverOpened(trace_path)
    prof.export_chrome_trace(str(trace_path))
    if cuda:
        profiling.memory.update(peak_allocated_mb=torch.cuda.max_memory_allocated() / 2**20,
                                peak_reserved_mb=torch.cuda.max_memory_reserved() / 2**20)
