"""Copies and reads of an output that dispatch through nothing learner code can register (issue 76).

The harness keeps every timed call's output inside the clock (tutor.harness.call_checks), right after the call
returned: there no check of the dispatcher's table (tutor.harness.dispatch_table) can run without costing the call,
and an aten copy would run whatever kernel or mode the call left in place. So a GPU output's bytes are copied into a
block of the caching allocator by the driver's own memcpy, and a host output's bytes are read straight from its
memory; both become tensors again only after the clock, once the table has been checked.
"""

from __future__ import annotations

import ctypes
import os
import random

import torch

from tutor.harness.gpu_clock import current_stream

# Bound as the harness imports, before any learner code: a workload cannot swap them for its own.
_raw_alloc = getattr(torch._C, "_cuda_cudaCachingAllocator_raw_alloc", None)
_raw_delete = getattr(torch._C, "_cuda_cudaCachingAllocator_raw_delete", None)
_draw = random.Random()
_driver = []  # the driver's cuMemcpyDtoDAsync, loaded at the first GPU copy


def _memcpy():
    if not _driver:
        fn = ctypes.CDLL("libcuda.so.1").cuMemcpyDtoDAsync_v2
        fn.argtypes = [ctypes.c_uint64, ctypes.c_uint64, ctypes.c_size_t, ctypes.c_void_p]
        fn.restype = ctypes.c_int
        _driver.append(fn)
    return _driver[0]


def span_bytes(t: torch.Tensor) -> int:
    """The bytes of its storage `t` reaches, from its first element to its last (a view's gaps included)."""
    if t.numel() == 0:
        return 0
    return (1 + sum((size - 1) * stride for size, stride in zip(t.shape, t.stride()))) * t.element_size()


class DeviceCopy:
    """A GPU tensor's bytes, copied on the current stream as they are when it is made (no aten operator runs)."""

    def __init__(self, t: torch.Tensor):
        self.shape, self.stride, self.dtype = tuple(t.shape), tuple(t.stride()), t.dtype
        self.nbytes = span_bytes(t)
        self.stream = current_stream().cuda_stream  # in the clock: torch.cuda's own costs tens of microseconds
        self.ptr = _raw_alloc(self.nbytes, self.stream) if self.nbytes else 0
        if self.nbytes:
            status = _memcpy()(self.ptr, t.data_ptr(), self.nbytes, self.stream)
            if status:
                raise RuntimeError(f"cuMemcpyDtoDAsync failed with CUDA error {status}")

    def tensor(self) -> torch.Tensor:
        """The copy as a tensor of the output's shape, dtype and strides: after the clock, with checked operators."""
        out = torch.empty(self.nbytes, dtype=torch.uint8, device="cuda")
        if self.nbytes:
            stream = current_stream()
            status = _memcpy()(out.data_ptr(), self.ptr, self.nbytes, stream.cuda_stream)
            if status:
                raise RuntimeError(f"cuMemcpyDtoDAsync failed with CUDA error {status}")
            stream.synchronize()  # read before the block goes back to the allocator, whatever stream it came from
        return out.view(self.dtype).as_strided(self.shape, self.stride)

    def __del__(self):
        if self.ptr and _raw_delete is not None:
            try:
                _raw_delete(self.ptr)
            except Exception:  # CUDA already torn down as the process ends: nothing left to free
                pass


class HostBytes:
    """`count` elements of a contiguous host tensor, at places drawn from the OS only now, read as raw bytes."""

    def __init__(self, t: torch.Tensor, count: int):
        self.dtype = t.dtype
        _draw.seed(int.from_bytes(os.urandom(8), "little"))
        self.places = [_draw.randrange(t.numel()) for _ in range(count)]
        self.values = self._read(t)

    def _read(self, t: torch.Tensor) -> bytes:
        size = t.element_size()
        memory = memoryview((ctypes.c_char * (t.numel() * size)).from_address(t.data_ptr()))
        return b"".join(memory[p * size:(p + 1) * size] for p in self.places)

    def changed(self, t: torch.Tensor) -> bool:
        """Whether `t` holds other bits at the places than it did when read: compared as bits, so a value that was
        NaN (memory a copy had not reached yet) and is a number now counts as changed."""
        return self._read(t) != self.values

    def tensor(self) -> torch.Tensor:
        """The values read, as a tensor of the output's dtype: after the clock, with checked operators."""
        return torch.frombuffer(bytearray(self.values), dtype=self.dtype)
