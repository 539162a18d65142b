"""How busy the GPU was over a stretch of wall time, as NVML samples it: the coordinator's view of a server's
replay, whatever process or stream ran the kernels (a serving grade's floor and its evidence,
tutor.harness.serving_rounds; challenges/puzzle18/sweeps/gpu_busy.py measured it on the H100).

NVML keeps a buffer of utilization samples (nvmlDeviceGetSamples, GPU_UTILIZATION_SAMPLES): each a timestamp
in microseconds and the percent of the period since the sample before during which a kernel ran. Read
through ctypes from the driver's libnvidia-ml, so nothing beyond the driver is needed. On the H100 (driver
580) a sample came every 200 ms, the buffer held the last 14 s of them, and their timestamps were the wall
clock's (time.time()) to within one period.
"""

from __future__ import annotations

import ctypes
import time

GPU_UTILIZATION_SAMPLES = 1  # nvmlSamplingType_t
NVML_ERROR_NOT_FOUND = 6  # no sample since the timestamp asked for
NVML_ERROR_INSUFFICIENT_SIZE = 7  # more processes than the buffer given: its count says how many
NVML_VALUE_NOT_AVAILABLE = 2**64 - 1  # a process's memory NVML cannot tell (no permission, say)


class NvmlUnavailable(RuntimeError):
    """No NVIDIA driver library here, or it refused: no busy time can be read."""


class _ProcessInfo(ctypes.Structure):  # nvmlProcessInfo_t, as nvmlDeviceGetComputeRunningProcesses_v3 fills it
    _fields_ = [("pid", ctypes.c_uint), ("used_bytes", ctypes.c_ulonglong), ("gpu_instance", ctypes.c_uint),
                ("compute_instance", ctypes.c_uint)]


class _Sample(ctypes.Structure):  # nvmlSample_t: a timestamp and an 8-byte value union (an unsigned int here)
    _fields_ = [("timestamp_us", ctypes.c_ulonglong), ("value", ctypes.c_ulonglong)]


def cuda_device_uuid() -> str:
    """CUDA's device 0 (as CUDA_VISIBLE_DEVICES numbers it) by its UUID, the name NVML knows it by whatever the
    renumbering: NVML's index 0 is the machine's first GPU, which may be another."""
    import torch  # only where a GPU is used: the coordinator opens NVML by a UUID it is given

    return str(torch.cuda.get_device_properties(0).uuid)


class Nvml:
    """What NVML holds for one GPU (NVML's index: the machine's order, not CUDA's): its utilization samples, and
    the memory of each process on it."""

    def __init__(self, index: int = 0, uuid: str | None = None):
        """The GPU of NVML's `index`, or the one whose UUID is `uuid` (as CUDA names it, with or without NVML's
        "GPU-"): a process's CUDA device 0 is NVML's index only when nothing renumbers the GPUs."""
        try:
            self.lib = ctypes.CDLL("libnvidia-ml.so.1")
        except OSError as e:
            raise NvmlUnavailable(f"no NVIDIA driver library (libnvidia-ml.so.1): {e}") from None
        self._check(self.lib.nvmlInit_v2(), "nvmlInit")
        self.device = ctypes.c_void_p()
        if uuid is None:
            self._check(self.lib.nvmlDeviceGetHandleByIndex_v2(index, ctypes.byref(self.device)), f"GPU {index}")
        else:
            named = uuid if uuid.startswith(("GPU-", "MIG-")) else f"GPU-{uuid}"
            self._check(self.lib.nvmlDeviceGetHandleByUUID(named.encode(), ctypes.byref(self.device)), named)

    @staticmethod
    def _check(code: int, what: str) -> None:
        if code:
            raise NvmlUnavailable(f"NVML error {code} for {what}")

    def process_bytes(self) -> dict[int, int]:
        """{pid: bytes} of every compute process on this GPU whose memory NVML can tell, its CUDA context
        included (tutor.harness.process_memory)."""
        count = ctypes.c_uint(0)
        code = self.lib.nvmlDeviceGetComputeRunningProcesses_v3(self.device, ctypes.byref(count), None)
        while code == NVML_ERROR_INSUFFICIENT_SIZE:  # a process may start between the two calls: ask again
            buffer = (_ProcessInfo * (count.value + 4))()
            count = ctypes.c_uint(len(buffer))
            code = self.lib.nvmlDeviceGetComputeRunningProcesses_v3(self.device, ctypes.byref(count), buffer)
            if not code:
                return {p.pid: p.used_bytes for p in buffer[:count.value] if p.used_bytes != NVML_VALUE_NOT_AVAILABLE}
        self._check(code, "compute processes")
        return {}

    def samples_since(self, since_us: int) -> list[tuple[int, int]]:
        """(timestamp in us, percent busy) of every sample after `since_us` (0: all NVML holds), oldest first."""
        kind, count = ctypes.c_int(), ctypes.c_uint(0)
        args = (self.device, GPU_UTILIZATION_SAMPLES, ctypes.c_ulonglong(since_us), ctypes.byref(kind))
        code = self.lib.nvmlDeviceGetSamples(*args, ctypes.byref(count), None)  # how many there are
        if code == NVML_ERROR_NOT_FOUND:
            return []
        self._check(code, "utilization samples")
        buffer = (_Sample * max(count.value, 1))()
        code = self.lib.nvmlDeviceGetSamples(*args, ctypes.byref(count), buffer)
        if code == NVML_ERROR_NOT_FOUND:
            return []
        self._check(code, "utilization samples")
        taken = [(s.timestamp_us, s.value & 0xFFFFFFFF) for s in buffer[:count.value] if s.timestamp_us > since_us]
        return sorted(taken)


def busy_ms(samples: list[tuple[int, int]], since_us: int, until_us: int) -> float:
    """Milliseconds a kernel ran between `since_us` and `until_us`: each sample's percent over the period it
    closes (from the sample before), counted for the part of that period inside the window. The first
    sample closes a period of unknown start: it only marks where the next one's begins."""
    total_us = 0.0
    for (start, _), (end, percent) in zip(samples, samples[1:]):
        inside = min(end, until_us) - max(start, since_us)
        if inside > 0:
            total_us += percent / 100 * inside
    return total_us / 1e3


def inner_busy_ms(samples: list[tuple[int, int]], since_us: int, until_us: int) -> tuple[float, float]:
    """(milliseconds a kernel ran, milliseconds covered) over the periods wholly inside the window: a period
    that straddles its edge holds what ran before or after it too (a grade's other replay), and NVML cannot say
    which part. What a grade's floor reads (tutor.grading.serving.check_serving_floor)."""
    busy_us = covered_us = 0.0
    for (start, _), (end, percent) in zip(samples, samples[1:]):
        if start >= since_us and end <= until_us:
            busy_us += percent / 100 * (end - start)
            covered_us += end - start
    return busy_us / 1e3, covered_us / 1e3


# How often a watch reads NVML's buffer: well within the 14 s of samples it held on the H100.
READ_EVERY_S = 4.0
SETTLE_LIMIT_S = 2.0  # the longest wait for the sample that closes a window's last period (NVML: 1/6 s to 1 s)


class BusyWatch:
    """Every utilization sample from its start on, read before NVML's buffer drops it (`poll` as often as you
    like: it reads every READ_EVERY_S), and the GPU's busy milliseconds over any window of wall-clock
    microseconds in that span (`inner_busy_ms`, once `settle` has read the samples that close them)."""

    def __init__(self, nvml: Nvml, clock=time.time, sleep=time.sleep):
        self.nvml, self.clock, self.sleep = nvml, clock, sleep
        held = nvml.samples_since(0)
        # The newest sample before the watch only marks where the first period after it begins.
        self.samples: dict[int, int] = dict(held[-1:])
        self.newest = held[-1][0] if held else 0
        self.read_at = clock()
        self.failed = ""  # why NVML stopped answering mid-grade: then nothing is read, and the grade goes on

    def now_us(self) -> int:
        return int(self.clock() * 1e6)

    def read(self) -> None:
        if self.failed:
            return
        try:
            for stamp, percent in self.nvml.samples_since(self.newest):
                self.samples[stamp] = percent
                self.newest = max(self.newest, stamp)
        except NvmlUnavailable as e:
            self.failed = str(e)
        self.read_at = self.clock()

    def poll(self) -> None:
        if self.clock() - self.read_at >= READ_EVERY_S:
            self.read()

    def settle(self, until_us: int) -> bool:
        """Read until a sample at or after `until_us` has come (the period holding it is closed); False if none
        came within SETTLE_LIMIT_S."""
        deadline = self.clock() + SETTLE_LIMIT_S
        self.read()
        while self.newest < until_us and self.clock() < deadline and not self.failed:
            self.sleep(0.05)
            self.read()
        return self.newest >= until_us

    def inner_busy_ms(self, since_us: int, until_us: int) -> tuple[float, float]:
        return inner_busy_ms(sorted(self.samples.items()), since_us, until_us)
