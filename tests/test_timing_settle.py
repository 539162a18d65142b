"""What a timed GPU call costs (tutor.harness.gpu_clock), and when missed work is charged.

Pure arithmetic on recorded clocks: the H100 side (the hold, the events) is in
tests/test_anticheat.py's GPU tests and benchmarks/timing_noise.py.
"""

from tutor.grading.performance import how_timed
from tutor.harness.gpu_clock import WorkloadClock, settle


def calls(clock: WorkloadClock) -> list[float]:
    return [clock.call_ms(i) for i in range(len(clock.gpu_ms))]


def test_a_held_call_costs_the_larger_of_its_gpu_and_host_times():
    clock = WorkloadClock(held=True, gpu_ms=[0.10, 0.10, 0.10], host_ms=[0.05, 0.30, 0.10], after_ms=[0.0] * 3)
    assert calls(clock) == [0.10, 0.30, 0.10]


def test_a_call_timed_from_an_idle_gpu_costs_its_events():
    # Its host returns late because forward() waited for the GPU: that wait is inside the events already.
    clock = WorkloadClock(held=False, gpu_ms=[0.40, 0.42], host_ms=[0.39, 0.41], after_ms=[0.01, 0.0])
    assert calls(clock) == [0.40, 0.42]


def test_sync_jitter_in_some_samples_keeps_event_timing():
    clock = WorkloadClock(held=False, gpu_ms=[0.100] * 15, host_ms=[0.02] * 15, after_ms=[0.005] * 10 + [0.08] * 5)
    samples = {"mine": calls(clock)}
    assert settle({"mine": clock}, samples) == [] and samples["mine"] == [0.100] * 15


def test_work_the_events_missed_is_charged_in_full():
    baseline = WorkloadClock(held=False, gpu_ms=[1.4] * 15, host_ms=[0.1] * 15, after_ms=[0.01] * 15)
    # mine's work ran on a side stream: the timed stream ended at once, the device 1.4 ms later.
    mine = WorkloadClock(held=False, gpu_ms=[0.02] * 15, host_ms=[0.05] * 15, after_ms=[1.41] * 15)
    samples = {"baseline": calls(baseline), "mine": calls(mine)}
    charged = settle({"baseline": baseline, "mine": mine}, samples)
    assert charged == ["mine"] and samples["mine"] == [0.02 + 1.41] * 15 and samples["baseline"] == [1.4] * 15


def test_a_held_workload_is_charged_what_ran_after_its_end_event():
    # Held, a side stream waits for the hold like everything else and runs after the end event.
    mine = WorkloadClock(held=True, hold_ms=0.5, gpu_ms=[0.003] * 9, host_ms=[0.06] * 9, after_ms=[1.37] * 9)
    samples = {"mine": calls(mine)}
    assert samples["mine"] == [0.06] * 9  # before settling: the host's enqueue, a 0.06 ms "call"
    assert settle({"mine": mine}, samples) == ["mine"]
    assert samples["mine"] == [0.003 + 1.37] * 9


def test_the_verdict_says_what_bound_each_workload():
    held = {"method": "held", "gpu_ms": [0.096, 0.095], "host_ms": [0.066, 0.070]}
    assert how_timed(held) == " (GPU-bound: GPU 0.0955 ms, host enqueue 0.068 ms)"
    eager = {"method": "held", "gpu_ms": [0.14], "host_ms": [0.33]}
    assert how_timed(eager).startswith(" (host-bound")
    assert "idle GPU" in how_timed({"method": "idle", "gpu_ms": [1.0], "host_ms": [1.0]})
    assert how_timed(None) == ""  # CPU puzzles: one clock
