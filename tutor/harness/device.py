"""The device the workloads run on, and the means to time it fairly."""

from __future__ import annotations

import contextlib
import gc
import statistics
import time

import torch

# A workload's median host time may exceed its median event time (less the sync cost) by this
# much before the host clock is believed instead: sync wake-up jitter stays below it.
ESCAPE_MIN_MS = 0.03
ESCAPE_FRACTION = 0.25
# Bound when the harness imports, before any learner code: a workload that swaps time.perf_counter_ns
# or torch.cuda.Event for its own changes nothing here (and tutor.harness.guard reports it).
_clock_ns = time.perf_counter_ns
_Event, _device_sync = torch.cuda.Event, torch.cuda.synchronize


class Device:
    """Wraps timing, synchronisation and cache flushing for CPU or one CUDA GPU."""

    def __init__(self, name: str, flush_l2: bool = True):
        self.name = name
        self.cuda = name == "cuda"
        self._flush = None
        self._host_ms: dict[str, list[float]] = {}  # per workload, beside the event samples
        self._sync_ms = self._calibrate_sync() if self.cuda else 0.0
        # Only timing needs the flush buffer; a profile's memory figures should be the workload's alone.
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
        # Garbage in reference cycles is not the workload's to keep: triton's autotuner, for one,
        # leaves tracebacks that hold prepare()'s frame, and with it the bf16 weights it was given.
        gc.collect()
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
        """One timed call from a cold L2 and an idle GPU, so launch latency is inside the number.

        CUDA events time the current stream; the host clock, stopped only once the
        whole device is idle, is kept beside them for `settle` to compare.
        """
        if not self.cuda:
            start = _clock_ns()
            out = fn()
            return (_clock_ns() - start) / 1e6, out
        self._flush.zero_()
        _device_sync()
        event_ms, host_ms, out = self._timed(fn, name)
        self._host_ms.setdefault(name, []).append(host_ms - self._sync_ms)
        return event_ms, out

    def settle(self, samples_ms: dict[str, list[float]]) -> list[str]:
        """Replace a workload's event samples by its host samples when the events missed its work.

        Work the events cannot see (a side stream never joined back, launches from another
        thread) still holds the host clock, which waits for the whole device. Decided per
        workload on medians, so sync jitter in single samples never flips it. Returns the
        workloads charged host time.
        """
        charged = []
        for name, host in self._host_ms.items():
            events = samples_ms.get(name)
            if not events or len(events) != len(host):
                continue
            missed = statistics.median(h - e for h, e in zip(host, events))
            if missed > max(ESCAPE_MIN_MS, ESCAPE_FRACTION * statistics.median(events)):
                samples_ms[name] = list(host)
                charged.append(name)
        return charged

    def _timed(self, fn, name: str) -> tuple[float, float, object]:
        start, end = _Event(enable_timing=True), _Event(enable_timing=True)
        with self.range(name):
            host_start = _clock_ns()
            start.record()
            out = fn()
            end.record()
            _device_sync()  # the whole device, every stream
            host_ms = (_clock_ns() - host_start) / 1e6
        return start.elapsed_time(end), host_ms, out

    def _calibrate_sync(self) -> float:
        """Host time minus event time of an empty call: the fixed cost of recording and syncing."""
        gaps = []
        for _ in range(31):
            event_ms, host_ms, _ = self._timed(lambda: None, "calibrate")
            gaps.append(host_ms - event_ms)
        return sorted(gaps)[len(gaps) // 2]

    def describe(self) -> dict:
        info = {"device": self.name, "torch": torch.__version__}
        if self.cuda:
            props = torch.cuda.get_device_properties(0)
            info.update(gpu=props.name, compute_capability=f"{props.major}.{props.minor}", sms=props.multi_processor_count)
        return info
