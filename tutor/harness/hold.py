"""Hold the whole GPU for a set time, so the host can enqueue a call before the GPU starts it.

With the GPU held, CUDA events around a call time the GPU's work alone: the host's
launch gaps (on a shared machine, its noisiest part) are not in them. The hold fills
every thread slot of every SM, so no kernel of another stream can run beside it: work a
workload puts on a side stream waits for the hold like the rest, and cannot hide in it.
"""

from __future__ import annotations

import torch
import triton
import triton.language as tl

THREADS_PER_BLOCK = 1024  # 32 warps


@triton.jit
def _now_ns():
    return tl.inline_asm_elementwise("mov.u64 $0, %globaltimer;", "=l", [], dtype=tl.int64, is_pure=False, pack=1)


@triton.jit
def _spin(duration_ns, never_ptr):
    start = _now_ns()
    now = start
    while now - start < duration_ns:
        now = _now_ns()
    if now < 0:  # never true: a store keeps the loop from being optimised away
        tl.store(never_ptr, now)


class GpuHold:
    """Launches the spin on every SM of the current device, enough blocks to fill each one."""

    def __init__(self) -> None:
        props = torch.cuda.get_device_properties(torch.cuda.current_device())
        self.blocks = props.multi_processor_count * max(1, props.max_threads_per_multi_processor // THREADS_PER_BLOCK)
        self._never = torch.zeros(1, dtype=torch.int64, device="cuda")
        self.hold_ms(0.01)  # compile now, not inside the first timed call
        torch.cuda.synchronize()

    def hold_ms(self, ms: float) -> None:
        _spin[(self.blocks,)](int(ms * 1e6), self._never, num_warps=THREADS_PER_BLOCK // 32)
