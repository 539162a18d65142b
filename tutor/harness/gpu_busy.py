"""How busy the GPU was over a stretch of wall time, as NVML samples it: the coordinator's view of a server's
replay, whatever process or stream ran the kernels (issue 18: a floor for a serving grade is to be set from
it; challenges/puzzle18/sweeps/gpu_busy.py measures it on the H100 first).

NVML keeps a buffer of utilization samples (nvmlDeviceGetSamples, GPU_UTILIZATION_SAMPLES): each a timestamp
in microseconds and the percent of the period since the sample before during which a kernel ran. Read
through ctypes from the driver's libnvidia-ml, so nothing beyond the driver is needed.
"""

from __future__ import annotations

import ctypes

GPU_UTILIZATION_SAMPLES = 1  # nvmlSamplingType_t
NVML_ERROR_NOT_FOUND = 6  # no sample since the timestamp asked for


class NvmlUnavailable(RuntimeError):
    """No NVIDIA driver library here, or it refused: no busy time can be read."""


class _Sample(ctypes.Structure):  # nvmlSample_t: a timestamp and an 8-byte value union (an unsigned int here)
    _fields_ = [("timestamp_us", ctypes.c_ulonglong), ("value", ctypes.c_ulonglong)]


class Nvml:
    """The utilization samples NVML holds for one GPU (NVML's index: the machine's order, not CUDA's)."""

    def __init__(self, index: int = 0):
        try:
            self.lib = ctypes.CDLL("libnvidia-ml.so.1")
        except OSError as e:
            raise NvmlUnavailable(f"no NVIDIA driver library (libnvidia-ml.so.1): {e}") from None
        self._check(self.lib.nvmlInit_v2(), "nvmlInit")
        self.device = ctypes.c_void_p()
        self._check(self.lib.nvmlDeviceGetHandleByIndex_v2(index, ctypes.byref(self.device)), f"GPU {index}")

    @staticmethod
    def _check(code: int, what: str) -> None:
        if code:
            raise NvmlUnavailable(f"NVML error {code} for {what}")

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
