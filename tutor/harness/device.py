"""The device the workloads run on, and the means to time it fairly."""

from __future__ import annotations

import contextlib
import gc
import time

import torch

from tutor.harness import gpu_clock
from tutor.harness.gpu_busy import cuda_device_uuid
from tutor.protocol import NVTX_PREFIX

# Bound when the harness imports, before any learner code: a workload that swaps time.perf_counter_ns
# for its own changes nothing here (and tutor.harness.guard reports it).
_clock_ns = time.perf_counter_ns


class Device:
    """Wraps timing, synchronisation and cache flushing for CPU or one CUDA GPU."""

    def __init__(self, name: str, flush_l2: bool = True):
        self.name = name
        self.cuda = name == "cuda"
        self._flush = None
        self._clock = None
        self.timing_note = ""  # why GPU calls are not held, where they cannot be
        # Only timing needs the flush buffer and the hold; a profile's memory figures should be the workload's alone.
        if self.cuda and flush_l2:
            # Twice the L2 so every timed call starts from a cold cache (50 MB on the H100).
            l2_bytes = getattr(torch.cuda.get_device_properties(0), "L2_cache_size", 50 * 2**20)
            self._flush = torch.empty(max(2 * l2_bytes, 64 * 2**20), dtype=torch.uint8, device="cuda")
            self._clock = gpu_clock.GpuClock(self._make_hold())

    def _make_hold(self):
        try:
            from tutor.harness.hold import GpuHold
            return GpuHold()
        except Exception as e:  # no triton, or its compiler failed: time every call from an idle GPU
            self.timing_note = f"every call timed from an idle GPU: the GPU hold is unavailable ({type(e).__name__}: {e})"
            return None

    def synchronize(self) -> None:
        if self.cuda:
            gpu_clock.device_sync()  # torch._C's: torch.cuda.synchronize() asks the driver for its GPUs first

    def allocated_bytes(self, full: bool = False) -> int:
        """Bytes held by live tensors on the GPU (0 on CPU): what a workload keeps resident.

        Garbage in reference cycles is not the workload's to keep: triton's autotuner, for one,
        leaves tracebacks that hold prepare()'s frame, and with it the bf16 weights it was given.
        What survives a collection is frozen out of the next ones (with torch.compile loaded a full
        collection took 0.12 s on the H100 hosts, and there are two per workload); `full` collects
        the frozen objects too, for a figure that must miss no garbage made since.
        """
        if not self.cuda:
            return 0
        if full:
            gc.unfreeze()
        gc.collect()
        gc.freeze()
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
        return torch.cuda.nvtx.range(NVTX_PREFIX + name)

    def calibrate(self, name: str, calls: list) -> None:
        """Decide how `name` is timed from a few of its calls: held, or from an idle GPU."""
        if self._clock:
            self._clock.calibrate(name, calls)

    def time_call_ms(self, fn, name: str = "call") -> tuple[float, object]:
        """One timed call from a cold L2 and an idle GPU: its milliseconds and its output.

        On CPU that is the call clock. On CUDA it is the GPU clock, the kernels' own time, timed as
        `calibrate` decided (tutor.harness.gpu_clock); a name never calibrated is timed from an idle
        GPU with CUDA events, launch latency included.
        """
        if not self.cuda:
            start = _clock_ns()
            out = fn()
            return (_clock_ns() - start) / 1e6, out
        self._flush.zero_()
        return self._clock.time_call_ms(fn, name)  # which waits for the device (and counts what it finds running)

    def flush_l2(self) -> None:
        """Write over L2, as before every timed call (nothing on CPU)."""
        if self._flush is not None:
            self._flush.zero_()

    def call_ms(self, make, call, flush: bool) -> float:
        """One call of the call clock: `call` on the input `make(flush)` makes, timed on its own; its milliseconds.

        `make` is called once the call before returned, with the one seed it makes an input of (issue 76: nothing
        of a call exists before the call before it returned), and writes over L2 after where `flush` asks. On CUDA
        the call is timed from an idle GPU until every stream drains (tutor.harness.gpu_clock); on CPU the host's
        clock counts the host's work alone, the making left out.
        """
        if self.cuda:
            return self._clock.call_ms(make, call, flush)
        x = make(False)
        start = _clock_ns()
        call(x)
        return (_clock_ns() - start) / 1e6

    def loop_sample(self, name: str, times: list[float]) -> float:
        """The call clock's sample from one loop's calls (call_ms). On CUDA their mean. On CPU their median: a call of
        a fraction of a millisecond that the OS preempts reads many times its time, and on a busy machine one such
        call in a round moved the round's mean (and a grade's lower bound) by 5x. A call cannot be quicker for a
        later call's slowness (its input does not exist yet), so the median gives nothing away."""
        if self.cuda:
            return self._clock.loop_sample(name, times)
        times = sorted(times)  # a median of builtins (tutor.harness.guard watches them), not statistics'
        return (times[(len(times) - 1) // 2] + times[len(times) // 2]) / 2

    def hold_ms(self, ms: float) -> bool:
        """Hold the whole GPU for `ms` from now, so the host runs ahead of it; False on CPU, or without the hold."""
        return bool(self._clock) and self._clock.hold_ms(ms)

    def wait_quiet(self, limit_s: float) -> float | None:
        """Before a comparator is timed: wait out GPU work another process left running (ms waited; None: it never stopped)."""
        return self._clock.wait_quiet(limit_s) if self._clock else 0.0

    def settle(self, floor_ms: float | None = None) -> tuple[list[str], float]:
        """Charge the GPU work each workload's events missed beyond `floor_ms` (the ruler's, for the candidate; the
        ruler reads its own: gpu_clock.after_floor_ms); returns the workloads charged and the floor."""
        if not self._clock:
            return [], 0.0
        floor = gpu_clock.after_floor_ms(self._clock.clocks) if floor_ms is None else floor_ms
        return gpu_clock.settle(self._clock.clocks, floor), floor

    def forget_clocks(self) -> None:
        """Every workload's clock and samples gone: a kept ruler's next check calibrates and times afresh."""
        if self._clock:
            self._clock.clocks.clear()

    def gpu_samples_ms(self) -> dict[str, list[float]]:
        """Per workload, each timed call's GPU time alone (after `settle`); empty on CPU."""
        if not self._clock:
            return {}
        return {name: [c.gpu_call_ms(i) for i in range(len(c.gpu_ms))] for name, c in self._clock.clocks.items()}

    def clocks(self) -> dict[str, dict]:
        """Per workload: how it was timed, and every sample of its GPU, host and after-the-end clocks."""
        return {name: clock.summary() for name, clock in self._clock.clocks.items()} if self._clock else {}

    def uuid(self) -> str | None:
        """The GPU's UUID as CUDA gives it (NVML's, less its "GPU-"): what names it to NVML whatever
        CUDA_VISIBLE_DEVICES renumbered (tutor.harness.gpu_busy)."""
        return cuda_device_uuid() if self.cuda else None

    def describe(self) -> dict:
        info = {"device": self.name, "torch": torch.__version__}
        if self.cuda:
            props = torch.cuda.get_device_properties(0)
            info.update(gpu=props.name, compute_capability=f"{props.major}.{props.minor}", sms=props.multi_processor_count)
        return info
