"""The device the workloads run on, and the means to time it fairly."""

from __future__ import annotations

import contextlib
import time

import torch


class Device:
    """Wraps timing, synchronisation and cache flushing for CPU or one CUDA GPU."""

    def __init__(self, name: str, flush_l2: bool = True):
        self.name = name
        self.cuda = name == "cuda"
        self._flush = None
        # Only timing needs it; a profile's memory figures should be the workload's alone.
        if self.cuda and flush_l2:
            # Twice the L2 so every timed call starts from a cold cache (50 MB on the H100).
            l2_bytes = getattr(torch.cuda.get_device_properties(0), "L2_cache_size", 50 * 2**20)
            self._flush = torch.empty(max(2 * l2_bytes, 64 * 2**20), dtype=torch.uint8, device="cuda")

    def synchronize(self) -> None:
        if self.cuda:
            torch.cuda.synchronize()

    def allocated_bytes(self) -> int:
        """Bytes held by live tensors on the GPU (0 on CPU): what a workload keeps resident."""
        if not self.cuda:
            return 0
        torch.cuda.synchronize()
        # cuBLAS workspaces come from the caching allocator on first use: not the workload's to own.
        clear_workspaces = getattr(torch._C, "_cuda_clearCublasWorkspaces", None)
        if clear_workspaces:
            clear_workspaces()
        return torch.cuda.memory_allocated()

    def poison_free_memory(self) -> None:
        """Fill every cached-but-free GPU block with 0xFF bytes (NaN in any float format).

        A CUDA graph keeps raw addresses, not tensors: one that reads weights prepare()
        let go of would give the right answer from stale memory, until the memory is
        reused. Poisoning makes that a visible wrong answer, by accident or by design.
        """
        if not self.cuda:
            return
        torch.cuda.synchronize()
        held = []  # held until all are filled, so each request takes a different free block
        for segment in torch.cuda.memory_snapshot():
            if tuple(segment.get("segment_pool_id", (0, 0))) != (0, 0):
                continue  # a graph's private pool: only its own graph allocates there
            for block in segment["blocks"]:
                if block["state"] == "inactive":
                    held.append(torch.full((block["size"],), 0xFF, dtype=torch.uint8, device="cuda"))
        torch.cuda.synchronize()
        del held

    def range(self, name: str):
        """An NVTX range `infprof.<name>` so Nsight tools can filter phases; nothing on CPU.

        A dot, not a slash: ncu's --nvtx-include reads "/" as range nesting.
        """
        if not self.cuda:
            return contextlib.nullcontext()
        return torch.cuda.nvtx.range(f"infprof.{name}")

    def time_call_ms(self, fn, name: str = "call") -> tuple[float, object]:
        """One timed call from a cold L2 and an idle GPU, so launch latency is inside the number."""
        if not self.cuda:
            start = time.perf_counter_ns()
            out = fn()
            return (time.perf_counter_ns() - start) / 1e6, out
        self._flush.zero_()
        torch.cuda.synchronize()
        start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        with self.range(name):
            start.record()
            out = fn()
            end.record()
        # The whole device, not just the event's stream: side-stream work must finish inside the sample.
        torch.cuda.synchronize()
        return start.elapsed_time(end), out

    def describe(self) -> dict:
        info = {"device": self.name, "torch": torch.__version__}
        if self.cuda:
            props = torch.cuda.get_device_properties(0)
            info.update(gpu=props.name, compute_capability=f"{props.major}.{props.minor}", sms=props.multi_processor_count)
        return info
