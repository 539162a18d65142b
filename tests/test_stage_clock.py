"""Where a long run's time went, from its stage events (tutor.stage_clock), and what a grade of the same code skips."""

from __future__ import annotations

from tutor import stage_clock
from tutor.stage_clock import StageClock

# A first grade whose code compiles for minutes in its warm-up, as the harness names its stages.
FIRST_GRADE = [("importing", "", 1.0), ("preparing", "the puzzle's workloads: a process", 2.0),
               ("warmup", "the puzzle's workloads: compiling and warming up", 3.0),
               ("preparing", "your workload: a process", 1.0),
               ("warmup", "your workload: compiling and warming up", 300.0), ("checking", "mine against eager", 2.0),
               ("timing", "40 interleaved rounds", 20.0), ("grading", "checking your answer", 0.5)]


def replayed(spans) -> StageClock:
    """A clock fed `spans` (stage, detail, seconds) as events arriving one after another."""
    now = [0.0]
    clock = StageClock(clock=lambda: now[0])
    for stage, detail, seconds in spans:
        clock.stage(stage, detail)
        now[0] += seconds
    clock.finish()
    return clock


def test_each_stage_lasts_until_the_next_begins():
    clock = replayed(FIRST_GRADE)
    assert clock.spans == FIRST_GRADE


def test_a_long_grade_says_where_its_time_went_and_what_the_next_grade_skips():
    where, skipped = replayed(FIRST_GRADE).account()
    assert where.startswith("330 s in all, most of it in warmup (your workload: compiling and warming up) 300 s;")
    assert "timing (40 interleaved rounds) 20 s" in where
    assert skipped.startswith("The warm-up of your workload took 300 s") and "your code's compile cache" in skipped
    assert skipped.endswith("the rest of this run took 30 s.")


def test_a_short_run_or_a_warm_up_that_compiled_little_says_nothing_of_compiles():
    assert replayed([(s, d, t / 10) for s, d, t in FIRST_GRADE]).account() == []
    cached = [(s, d, 10.0 if s == "warmup" else t) for s, d, t in FIRST_GRADE] + [("timing", "more rounds", 60.0)]
    [where] = replayed(cached).account()
    assert "timing" in where

