"""When work a GPU call's events missed is charged (tutor.harness.gpu_clock), and how the verdict says what bound a call.

Pure arithmetic on recorded clocks: the H100 side (the hold, the events, the loop) is in
tests/test_gpu_clock.py, tests/test_anticheat.py's GPU tests and benchmarks/timing_noise.py.
"""

from tutor.grading.performance import Measured, how_timed
from tutor.harness.gpu_clock import WorkloadClock, after_floor_ms, settle


def gpu(clock: WorkloadClock) -> list[float]:
    return [clock.gpu_call_ms(i) for i in range(len(clock.gpu_ms))]


def test_sync_jitter_in_some_samples_keeps_event_timing():
    """A third of the calls woke late from their sync: the median is the floor's, and no sample moves."""
    clock = WorkloadClock(held=False, gpu_ms=[0.100] * 15, host_ms=[0.02] * 15, after_ms=[0.005] * 10 + [0.08] * 5)
    assert settle({"mine": clock}, floor_ms=0.005) == [] and gpu(clock) == [0.100] * 15


def test_work_the_events_missed_is_charged_in_full():
    ruler = {"baseline": WorkloadClock(held=False, gpu_ms=[1.4] * 15, host_ms=[0.1] * 15, after_ms=[0.01] * 15)}
    floor = after_floor_ms(ruler)
    assert settle(ruler, floor) == [] and gpu(ruler["baseline"]) == [1.4] * 15
    # mine's work ran on a side stream: the timed stream ended at once, the device 1.4 ms later.
    mine = WorkloadClock(held=False, gpu_ms=[0.02] * 15, host_ms=[0.05] * 15, after_ms=[1.41] * 15)
    assert settle({"mine": mine}, floor) == ["mine"]
    assert [round(ms, 6) for ms in gpu(mine)] == [0.02 + 1.4] * 15


def test_no_floor_charges_every_late_sample_median():
    """Without a ruler's floor (none was read), the whole median residue counts: stricter, never looser."""
    clock = WorkloadClock(held=True, gpu_ms=[0.100] * 5, host_ms=[0.02] * 5, after_ms=[0.01] * 5)
    assert settle({"mine": clock}) == [] and [round(ms, 6) for ms in gpu(clock)] == [0.11] * 5


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


def test_a_grades_sync_cost_is_no_ones_work():
    """Each call's residue after its end event, beyond the ruler's floor, is what is charged. One H100, 2026-12-07,
    puzzle3's reference (a graph of four GEMMs, 0.092 ms of GPU time): it read 0.030 ms after its end events, GemLite's
    graph 0.027 and the baseline 0.035, every call of that grade, honest or not; over the absolute 0.03 ms it was
    charged all of it, 1.03x GemLite's graph on GPU time where its kernels ran 1.35x, and lost gold."""
    ruler = {"baseline": WorkloadClock(held=True, gpu_ms=[0.120] * 9, host_ms=[0.9] * 9, after_ms=[0.035] * 9),
             "gemlite_graph": WorkloadClock(held=True, gpu_ms=[0.125] * 9, host_ms=[0.09] * 9, after_ms=[0.027] * 9)}
    floor = after_floor_ms(ruler)
    assert 0.027 <= floor <= 0.035 and settle(ruler, floor) == []
    reference = WorkloadClock(held=True, gpu_ms=[0.0923] * 9, host_ms=[0.11] * 9, after_ms=[0.0303] * 9)
    assert settle({"mine": reference}, floor) == [] and gpu(reference) == [0.0923] * 9
    assert settle({"mine": reference}) == ["mine"]  # against no floor, as before: charged in full


def test_work_past_the_floor_is_charged_and_only_that():
    ruler = {"baseline": WorkloadClock(held=True, gpu_ms=[0.5] * 9, host_ms=[0.1] * 9, after_ms=[0.02] * 9)}
    floor = after_floor_ms(ruler)
    tail = WorkloadClock(held=True, gpu_ms=[0.4] * 9, host_ms=[0.05] * 9, after_ms=[0.02 + 0.085] * 9)
    assert settle({"mine": tail}, floor) == ["mine"]
    assert [round(ms, 6) for ms in gpu(tail)] == [0.485] * 9
    # Under the verdict's threshold, still charged: no part of a call runs free because it is small.
    small = WorkloadClock(held=True, gpu_ms=[0.09] * 9, host_ms=[0.05] * 9, after_ms=[0.02 + 0.025] * 9)
    assert settle({"mine": small}, floor) == [] and [round(ms, 6) for ms in gpu(small)] == [0.115] * 9
    assert after_floor_ms({}) == 0.0
