"""The most GPU memory a process's caching allocator held over a grade's calls, read so that no workload can
lower it: the figure a puzzle's memory budget (a spec's MEMORY_SLACK; graders/puzzle23.py) is judged by.

The allocator's own peak statistic (reserved_bytes.all.peak) is the figure. The harness resets it once, after
prepare(), with the function it kept before any workload loaded; from then on every way torch offers to reset it
is replaced by one that counts the call and resets nothing. And since a peak can only grow unless reset, the
harness reads it after every round: a peak read lower than the one before shows a reset made any other way.

Beside it, at each read, the GPU memory this process holds (NVML's count for it alone) less this allocator's
reserve: its CUDA context and whatever it holds outside torch's allocator, judged with the peak by a puzzle's
grader. Where NVML cannot count the process alone, the whole device's memory in use stands in, the other
process's included, and the report says so (outside_source): such a figure cannot be judged.
"""

from __future__ import annotations

import importlib
import os

import torch

from tutor.harness.process_memory import ALONE, nvml_counts

# Every public and private way torch gives Python to reset the allocator's peaks (torch.cuda.memory re-exports
# the first four; the last two are what they call).
RESETTERS = (("torch.cuda", "reset_peak_memory_stats"), ("torch.cuda", "reset_max_memory_allocated"),
             ("torch.cuda", "reset_max_memory_cached"), ("torch.cuda", "reset_accumulated_memory_stats"),
             ("torch.cuda.memory", "reset_peak_memory_stats"), ("torch.cuda.memory", "reset_max_memory_allocated"),
             ("torch.cuda.memory", "reset_max_memory_cached"), ("torch.cuda.memory", "reset_accumulated_memory_stats"),
             ("torch._C", "_cuda_resetPeakMemoryStats"), ("torch._C", "_cuda_resetAccumulatedMemoryStats"))


DEVICE_WIDE = "the whole device"  # a count graders/puzzle23.py cannot judge: only ALONE's


def _process_memory():
    """A reader of the GPU memory this very process holds on its GPU, its CUDA context included (NVML's count per
    process, which another process's memory does not enter), or None where NVML is not there or cannot see this
    process (another PID namespace)."""
    counts = nvml_counts(str(torch.cuda.get_device_properties(torch.cuda.current_device()).uuid))
    if counts is None:
        return None
    pid = os.getpid()
    used = lambda: counts().get(pid)  # noqa: E731
    return used if used() is not None else None


class AllocatorPeak:
    """Installed before any workload loads; `start` after they are prepared, `read` after every round."""

    def __init__(self, peak_bytes=None, reset=None, outside_bytes=None):
        # Injected on the CPU, where there is no allocator (tests/test_allocator_peak.py).
        self._peak_bytes = peak_bytes or (lambda: torch.cuda.memory_stats().get("reserved_bytes.all.peak", 0))
        self._reset = reset or torch._C._cuda_resetPeakMemoryStats
        self.outside_source = "given"
        if outside_bytes is None:
            process_memory = _process_memory()
            self.outside_source = ALONE if process_memory else DEVICE_WIDE
            outside_bytes = lambda: self._outside_allocator(process_memory)  # noqa: E731
        self._outside_bytes = outside_bytes
        self.outside = {"at_setup": self._outside_bytes()}  # before any workload of this process loads
        self.resets = 0  # resets a workload asked for, through torch
        self.lowered = 0  # reads lower than the read before: a reset made some other way
        self.peak = 0
        self._last = 0
        self.harness_bytes = 0  # the most the harness's own inputs held at once: in both processes alike
        for module_name, attribute in RESETTERS:
            module = importlib.import_module(module_name)
            if hasattr(module, attribute):
                setattr(module, attribute, self._counted)

    def _outside_allocator(self, process_memory) -> int:
        """This process's GPU memory less what its caching allocator has reserved."""
        held = process_memory() if process_memory else None
        if held is None:  # NVML has lost sight of the process, or never had it: no read of it is judged alone
            self.outside_source = DEVICE_WIDE
            free, total = torch.cuda.mem_get_info()
            held = total - free
        return held - torch.cuda.memory_reserved()

    def _counted(self, *args, **kwargs) -> None:
        self.resets += 1

    def start(self) -> None:
        """The peak from here on: what prepare() left reserved, and what the calls add."""
        self._reset(torch.cuda.current_device() if torch.cuda.is_available() else 0)
        self._last = self.peak = self._peak_bytes()
        self.outside["at_start"] = self.outside["least"] = self.outside["most"] = self._outside_bytes()

    def read(self) -> None:
        now = self._peak_bytes()
        if now < self._last:
            self.lowered += 1
        self._last = now
        self.peak = max(self.peak, now)
        outside = self._outside_bytes()
        self.outside["least"] = min(self.outside.get("least", outside), outside)
        self.outside["most"] = max(self.outside.get("most", outside), outside)

    def harness_holds(self, nbytes: int) -> None:
        """What the harness's own tensors hold now (the warm-up inputs, a round's inputs made before its calls):
        the same in both processes, which share their seeds, and none of the workload's doing."""
        self.harness_bytes = max(self.harness_bytes, nbytes)

    def report(self) -> dict:
        return {"peak_reserved_bytes": self.peak, "resets": self.resets, "lowered": self.lowered,
                "outside_bytes": dict(self.outside), "outside_source": self.outside_source,
                "harness_bytes": self.harness_bytes}

    def fault(self) -> str:
        """What fair play says when the workload touched the peak, else ""."""
        if not (self.resets or self.lowered):
            return ""
        how = (f"called torch's reset of the allocator's peak statistics {self.resets} time(s)" if self.resets else
               f"lowered the allocator's peak statistic between the harness's reads {self.lowered} time(s)")
        return (f"your workload {how}: the memory budget is judged by the most memory your process held over "
                "every call, so leave the allocator's statistics to the harness")
