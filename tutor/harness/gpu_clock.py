"""How calls on the GPU are timed: two clocks for each workload, from two kinds of run.

- the call clock, what a call costs in a serving loop: a few calls on fresh inputs, each input made
  once the call before returned, each call timed on the host from an idle GPU until every stream of
  the device is drained (the L2 cold before the first). One untimed call just before warms the host: a
  worker that has just waited on its pipe runs its first call 2-6x slower than a loop does (cold caches,
  a core at low clock; benchmarks/hold_effect.py on the H100). Work on any stream is in it, whatever the events see.
- the GPU clock, the kernels' own time: one call timed with CUDA events, one of two ways chosen
  after warm-up. Held: the whole GPU is held (tutor.harness.hold) while the host enqueues the call,
  so the events time the GPU's work alone; on the shared H100 hosts the host's launch gaps are the
  noisiest part of a call timed from an idle GPU (IQR 10-50% of the median, against 0.5-1% for the
  GPU's own time: benchmarks/timing_noise.py). Idle: from an idle GPU, for a workload that waits
  for the GPU inside forward() (a .item(), a copy to the host): held, its host would wait out the
  hold too. Either way the device must be idle when the timed stream's end event is: work the
  events missed (a side stream never joined back, a thread's launches) is charged to every call,
  as its median over the workload's calls, beyond what the ruler's own calls read after their end
  events in the same grade (`after_floor_ms`): that floor is a sync's own cost on the host, which
  moves 0.005-0.05 ms between grades and hosts, and is no one's work; a median, so that sync jitter
  in single samples adds no noise to a clock whose spread is otherwise 0.2%.
"""

from __future__ import annotations

import statistics
import time
from dataclasses import dataclass, field

import torch

# Bound when the harness imports, before any learner code: a workload that swaps time.perf_counter_ns
# or torch.cuda.Event for its own changes nothing here (and tutor.harness.guard reports it).
_clock_ns = time.perf_counter_ns
_Event = torch.cuda.Event
_Stream = torch.cuda.Stream
_current_device = getattr(torch._C, "_cuda_getDevice", None)
_stream_of = getattr(torch._C, "_cuda_getCurrentStream", None)
# torch._C's device-wide sync, not torch.cuda.synchronize: the Python wrapper's device switching
# added 10-30 µs of jitter to the device time read after an end event (benchmarks/escape_check.py).
device_sync = getattr(torch._C, "_cuda_synchronize", torch.cuda.synchronize)

# Missed work is always charged (beyond the floor); past this much a call, the verdict names it as work the events
# missed. Honest workloads read 0.017 ms under to 0.031 ms over their grade's floor (one H100, 2026-12-07; graph
# replays the highest), which a side stream's tail (0.085 ms a call in puzzle9's cheat) clears.
ESCAPE_MIN_MS = 0.03
# Calibration holds the GPU this long: a workload whose host has not finished enqueuing by then
# (most of it) waits for the GPU inside forward(), or is so host-bound that holding changes little.
# Longer holds slow the host's enqueue and add jitter to the device time read after the call
# (a graph replay's enqueue took 146 µs under a 2 ms hold and 215-266 µs under 20 ms).
PROBE_HOLD_MS = 5.0
WAITS_FRACTION = 0.8
PROBE_CALLS = 7
# A held call's hold: three times the host's median enqueue, plus a margin for its first launch.
HOLD_FACTOR, HOLD_MARGIN_MS = 3.0, 0.2
# The GPU is quiet when this many round trips in a row (an empty kernel, then a sync) are about
# as fast as on an idle GPU: another process's kernels make ours wait for their time slice.
QUIET_PROBES = 3
BUSY_FACTOR, BUSY_MARGIN_MS = 4.0, 0.25


@dataclass
class WorkloadClock:
    """One workload's way of being timed and every sample of its clocks, in milliseconds."""

    held: bool
    hold_ms: float = 0.0
    gpu_ms: list[float] = field(default_factory=list)  # CUDA events around the GPU clock's call
    host_ms: list[float] = field(default_factory=list)  # the host, from that call until it returned
    after_ms: list[float] = field(default_factory=list)  # the device busy after the end event, or before the call
    loop_ms: list[float] = field(default_factory=list)  # the call clock: per call, a loop's mean
    floor_ms: float = 0.0  # what the ruler's calls of the same grade read after their end events (settle)
    charge_ms: float = 0.0  # added to every call: the median of `after_ms` beyond `floor_ms` (settle)

    @property
    def charged(self) -> bool:
        """The charge is past ESCAPE_MIN_MS: the verdict names it."""
        return self.charge_ms > ESCAPE_MIN_MS

    def gpu_call_ms(self, i: int) -> float:
        """The GPU's time for call i: what the events saw, and what ran after them beyond the floor."""
        return self.gpu_ms[i] + self.charge_ms

    def summary(self) -> dict:
        return {"method": "held" if self.held else "idle", "hold_ms": self.hold_ms, "charged": self.charged,
                "floor_ms": self.floor_ms, "charge_ms": self.charge_ms, "gpu_ms": list(self.gpu_ms),
                "host_ms": list(self.host_ms), "after_ms": list(self.after_ms), "loop_ms": list(self.loop_ms)}


def after_floor_ms(clocks: dict[str, WorkloadClock]) -> float:
    """What trusted calls (the ruler's: it never loads learner code) read after their end events, pooled: the cost
    of a sync on this host in this grade. One H100, 2026-12-07: 0.005-0.047 ms a grade, the calls of one grade
    within 0.01 ms of each other; puzzle3's were 0.021-0.035 ms beside 0.09-0.12 ms of GPU time."""
    samples = [ms for clock in clocks.values() for ms in clock.after_ms]
    return statistics.median(samples) if samples else 0.0


def settle(clocks: dict[str, WorkloadClock], floor_ms: float = 0.0) -> list[str]:
    """Charge each workload the device time after its end events beyond `floor_ms` (after_floor_ms), a median a
    call; return the names of those charged past ESCAPE_MIN_MS."""
    for clock in clocks.values():
        if clock.after_ms:
            clock.floor_ms = floor_ms
            clock.charge_ms = max(0.0, statistics.median(clock.after_ms) - floor_ms)
    return [name for name, clock in clocks.items() if clock.charged]


class GpuClock:
    """Times calls on the current CUDA device; `hold` None times every workload from an idle GPU."""

    def __init__(self, hold) -> None:
        self._hold = hold
        self.clocks: dict[str, WorkloadClock] = {}
        self._idle_sync_ms = self._held_sync_ms = 0.0
        self._idle_sync_ms = self._empty_call_ms(held=False)
        self._drain_ms = _median_of(lambda: self._round_trip_ms(sleep=False))
        if hold:
            self._held_sync_ms = self._empty_call_ms(held=True)
        idle_trip_ms = _median_of(self._round_trip_ms)
        self._busy_ms = max(BUSY_FACTOR * idle_trip_ms, idle_trip_ms + BUSY_MARGIN_MS)

    def hold_ms(self, ms: float) -> bool:
        """Hold the whole GPU for `ms` from now; False where the hold is unavailable."""
        if self._hold is None:
            return False
        self._hold.hold_ms(ms)
        return True

    def wait_quiet(self, limit_s: float) -> float | None:
        """Wait until no other process runs work on this GPU; the milliseconds waited, None if it never got quiet."""
        start = _clock_ns()
        fast = 0
        while fast < QUIET_PROBES:
            fast = fast + 1 if self._round_trip_ms() <= self._busy_ms else 0
            if (_clock_ns() - start) / 1e9 > limit_s:
                return None
        return (_clock_ns() - start) / 1e6

    @staticmethod
    def _round_trip_ms(sleep: bool = True) -> float:
        start = _clock_ns()
        if sleep:
            torch.cuda._sleep(1)
        device_sync()
        return (_clock_ns() - start) / 1e6

    def calibrate(self, name: str, calls: list) -> WorkloadClock:
        """Hold or not, and for how long: from the host's enqueue of `calls` (on fresh inputs) while the GPU is held.

        Fresh inputs, as the timed calls get: whether a call waits for the GPU may depend on its
        input (cudagraph trees may sync when a new batch size takes them to another branch).
        """
        if self._hold is None:
            clock = WorkloadClock(held=False)
        else:
            enqueue_ms = statistics.median(self._run(call, held=True, hold_ms=PROBE_HOLD_MS)[2] for call in calls)
            waits = enqueue_ms >= WAITS_FRACTION * PROBE_HOLD_MS
            clock = WorkloadClock(held=not waits, hold_ms=0.0 if waits else HOLD_FACTOR * enqueue_ms + HOLD_MARGIN_MS)
        self.clocks[name] = clock
        return clock

    def time_call_ms(self, fn, name: str) -> tuple[float, object]:
        """The GPU clock's call, the GPU idle before it: its GPU time so far (before `settle`) and its output.

        The device is drained first, once the harness's own work (the input's making, L2's flush) is done: what it
        still runs then is no one's but the workload's (a thread of it that queued work on the new input), and is
        counted with what runs after the end event, as work the events missed."""
        clock = self._clock(name)
        before_ms = self._busy_after_own_work_ms()
        out, gpu_ms, host_ms, after_ms = self._run(fn, clock.held, clock.hold_ms)
        clock.gpu_ms.append(gpu_ms)
        clock.host_ms.append(host_ms)
        clock.after_ms.append(after_ms + before_ms)
        return clock.gpu_call_ms(len(clock.gpu_ms) - 1), out

    def call_ms(self, make, call, flush: bool) -> float:
        """One call of the call clock: `call` on the input `make(flush)` makes (L2 written over after it where `flush`
        asks), made once the device drained after the call before, then timed from an idle GPU until the whole
        device drains again; its milliseconds. Timed from idle, no call's work runs free while the next input is
        made: a window left out of a clock that work on another stream can still fill (benchmarks/loop_clocks.py
        measured the designs). Between the making and the clock's start the harness waits for its own work alone,
        not the device's: work a thread of the workload queued on the new input meanwhile is still running when the
        clock starts, and counts (a device-wide wait there ran it free)."""
        x = make(flush)
        _own_work_done()
        start = _clock_ns()
        call(x)
        device_sync()
        return max(0.0, (_clock_ns() - start) / 1e6 - self._drain_ms)

    def loop_sample(self, name: str, times: list[float]) -> float:
        """The call clock's sample of `name` from a loop's calls (call_ms): their mean, kept in its clock."""
        ms = sum(times) / len(times)
        self._clock(name).loop_ms.append(ms)
        return ms

    def _busy_after_own_work_ms(self) -> float:
        """How long the device stays busy once the harness's own work is done, beyond an idle device's sync."""
        _own_work_done()
        start = _clock_ns()
        device_sync()
        return max(0.0, (_clock_ns() - start) / 1e6 - self._drain_ms)

    def _clock(self, name: str) -> WorkloadClock:
        """`name`'s clock; one never calibrated is timed from an idle GPU."""
        return self.clocks.get(name) or self.clocks.setdefault(name, WorkloadClock(held=False))

    def _run(self, fn, held: bool, hold_ms: float) -> tuple[object, float, float, float]:
        start, end = _Event(enable_timing=True), _Event(enable_timing=True)
        if held:
            self._hold.hold_ms(hold_ms)
        host_start = _clock_ns()
        start.record(current_stream())
        out = fn()
        end.record(current_stream())
        returned = _clock_ns()
        # What the device still runs once the timed stream's end event is reached, read directly, held or not. Read
        # as the call's wall time less its events' (as it once was from an idle GPU), the residue grows with the
        # call: on one H200 the idle-timed baselines of puzzle4, 5 and 7, every kernel on the timed stream, read
        # over 30 us of it and were charged.
        end.synchronize()
        ended = _clock_ns()
        device_sync()  # the whole device, every stream
        after_ms = (_clock_ns() - ended) / 1e6 - (self._held_sync_ms if held else self._idle_sync_ms)
        return out, start.elapsed_time(end), (returned - host_start) / 1e6, max(0.0, after_ms)

    def _empty_call_ms(self, held: bool) -> float:
        """The device time an empty call seems to leave after its end event: the fixed cost of syncing."""
        return _median_of(lambda: self._run(lambda: None, held, 0.01)[3])


def current_stream():
    """This thread's current CUDA stream, as torch.cuda.current_stream() gives it, less its cost: that asks the driver
    how many GPUs there are every time (torch.cuda.is_available), 49 us a read on an H100 host (`python
    benchmarks/profile_harness.py puzzle1 --workers`: 3,826 reads, 0.19 s of a grade). Read around every timed call
    (its events, the copy of its output), where a fixed cost in every call brings every ratio toward 1."""
    if _stream_of is None or _current_device is None:
        return torch.cuda.current_stream()
    stream_id, device_index, device_type = _stream_of(_current_device())
    return _Stream(stream_id=stream_id, device_index=device_index, device_type=device_type)


def _own_work_done() -> None:
    """Wait for the work this thread queued on its current stream so far (an input's making), and no other."""
    done = _Event()
    done.record(current_stream())
    done.synchronize()


def _median_of(probe, times: int = 31) -> float:
    """The median of `times` readings of a probe of the device's fixed costs."""
    return statistics.median(probe() for _ in range(times))
