"""The most GPU memory each side's processes held, counted by NVML from the coordinator between their calls.

A process's own figures (tutor.harness.allocator_peak) are read inside it, where learner code could reach the
objects that keep them. NVML's count for a process, read from the coordinator while the process waits for its next
message, is out of that reach: it holds the CUDA context, the caching allocator's reserve and anything taken past
it. Read between calls it can miss a peak a call freed before returning, so it bounds what a process held from
below: a memory budget judges by the larger of the two (graders/puzzle23.py).
"""

from __future__ import annotations

from tutor.harness.gpu_busy import Nvml, NvmlUnavailable

# How a count of one process alone is named where it is reported (allocator_peak) and judged (graders/puzzle23.py).
ALONE = "this process (NVML)"


def nvml_counts(uuid: str | None = None):
    """A reader of {pid: bytes} on the GPU of that uuid (as CUDA names it), else NVML's first; None where NVML is
    not there or names no such GPU."""
    try:
        nvml = Nvml(uuid=uuid)
        nvml.process_bytes()
    except (NvmlUnavailable, AttributeError):  # no driver library, or one without the call: nothing is counted
        return None

    def read() -> dict[int, int]:
        try:
            return nvml.process_bytes()
        except NvmlUnavailable:  # a read NVML refused counts no process: as one it cannot see
            return {}

    return read


class ProcessMemory:
    """`observe(role, pids)` after each message a side answers; `report()` the most each role's processes held."""

    def __init__(self, reader=None, uuid: str | None = None):
        self._read = reader if reader is not None else nvml_counts(uuid)
        self.most: dict[str, int] = {}

    def observe(self, role: str, pids: list[int]) -> None:
        if self._read is None:
            return
        counts = self._read()
        held = sum(counts.get(pid, 0) for pid in pids)
        if held:  # a process NVML cannot see (another PID namespace) is not counted as holding nothing
            self.most[role] = max(self.most.get(role, 0), held)

    def report(self) -> dict[str, int]:
        return dict(self.most)
