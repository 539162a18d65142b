"""When work a GPU call's events missed is charged (tutor.harness.gpu_clock), and how the verdict says what bound a call.

Pure arithmetic on recorded clocks: the H100 side (the hold, the events, the loop) is in
tests/test_gpu_clock.py, tests/test_anticheat.py's GPU tests and benchmarks/timing_noise.py.
"""

from tutor.grading.performance import Measured, how_timed
from tutor.harness.gpu_clock import WorkloadClock, settle


def gpu(clock: WorkloadClock) -> list[float]:
    return [clock.gpu_call_ms(i) for i in range(len(clock.gpu_ms))]


def test_sync_jitter_in_some_samples_keeps_event_timing():
    clock = WorkloadClock(held=False, gpu_ms=[0.100] * 15, host_ms=[0.02] * 15, after_ms=[0.005] * 10 + [0.08] * 5)
    assert settle({"mine": clock}) == [] and gpu(clock) == [0.100] * 15


def test_work_the_events_missed_is_charged_in_full():
    baseline = WorkloadClock(held=False, gpu_ms=[1.4] * 15, host_ms=[0.1] * 15, after_ms=[0.01] * 15)
    # mine's work ran on a side stream: the timed stream ended at once, the device 1.4 ms later.
    mine = WorkloadClock(held=False, gpu_ms=[0.02] * 15, host_ms=[0.05] * 15, after_ms=[1.41] * 15)
    assert settle({"baseline": baseline, "mine": mine}) == ["mine"]
    assert gpu(mine) == [0.02 + 1.41] * 15 and gpu(baseline) == [1.4] * 15


def test_a_held_workload_is_charged_what_ran_after_its_end_event():
    # Held, a side stream waits for the hold like everything else and runs after the end event.
    mine = WorkloadClock(held=True, hold_ms=0.5, gpu_ms=[0.003] * 9, host_ms=[0.06] * 9, after_ms=[1.37] * 9)
    assert gpu(mine) == [0.003] * 9  # before settling: what the events saw
    assert settle({"mine": mine}) == ["mine"]
    assert gpu(mine) == [0.003 + 1.37] * 9


def test_the_verdict_says_what_bound_each_workload():
    def bound(method: str, loop_ms: list[float], gpu_ms: list[float]) -> str:  # the GPU samples as settled
        return how_timed(Measured({"x": loop_ms}, {"x": gpu_ms}, clocks={"x": {"method": method}}), "x")

    assert bound("held", [0.097, 0.098], [0.096, 0.095]) == (
        " (GPU-bound: 0.0975 ms a call until the GPU is done, 0.0955 ms of it on the GPU)")
    assert bound("held", [0.29], [0.14]).startswith(" (host-bound: 0.29 ms a call")
    # Charged: the GPU time includes what ran after the end event.
    assert bound("held", [1.4], [0.003 + 1.37]).startswith(" (GPU-bound: 1.4 ms a call until the GPU is done, 1.373 ms")
    assert "idle GPU" in bound("idle", [1.0], [1.0])
    assert how_timed(Measured({"x": [100.0]}), "x") == ""  # CPU puzzles: one clock


def test_a_tail_past_the_clock_is_charged_whatever_its_share_of_the_call():
    # A sixth of a kernel puzzle's grid left on a side stream after the end event, every call: 17% of the GPU time,
    # once free under a threshold of a quarter of the call, now charged like any other missed work.
    mine = WorkloadClock(held=True, hold_ms=0.2, gpu_ms=[0.50] * 15, host_ms=[0.03] * 15, after_ms=[0.085] * 15)
    assert settle({"mine": mine}) == ["mine"]
    assert gpu(mine) == [0.50 + 0.085] * 15


def test_the_verdict_names_a_charge_only_where_a_gpu_clock_took_it():
    """A charge moves the GPU clock alone. Several ranks report none (an NCCL kernel's time includes its wait for
    the other rank), so a charge there changed nothing: the verdict does not name it (2 x H200, puzzle25: both
    sides' NCCL streams set it off in every grade)."""
    from tutor.catalog import get_puzzle
    from tutor.grading.performance import check_performance

    puzzle = get_puzzle("puzzle19")
    calls = {"baseline": [2.0, 2.1, 2.0, 2.05], "mine": [1.0, 1.05, 1.0, 1.02]}
    missed = "GPU work ran after the timed stream had finished"
    ranks = check_performance(puzzle, Measured(calls, {}, host_timed=["baseline", "mine"]))[0]
    assert not any(missed in d for d in ranks.details)
    one_gpu = check_performance(puzzle, Measured(calls, calls, host_timed=["mine"]))[0]
    assert [d for d in one_gpu.details if missed in d] == [f"mine: {missed} (a side stream not joined back?) and "
                                                          "was counted in full"]
    # With its clock's samples, the charge says how much it was: a side stream's tail and a long call's sync jitter
    # (one H200, puzzle27's prototype: 0.03 ms after 74 ms calls) read apart.
    clocks = {"mine": {"method": "held", "after_ms": [0.031, 0.033, 0.036, 0.030]}}
    timed = check_performance(puzzle, Measured(calls, calls, host_timed=["mine"], clocks=clocks))[0]
    assert [d for d in timed.details if missed in d] == [f"mine: {missed} (a side stream not joined back?) and was "
                                                         "counted in full: 0.032 ms a call, 3.2% of its GPU time"]
