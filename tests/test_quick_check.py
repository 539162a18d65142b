"""The quick check that watch mode runs: tiers it can tell from one comparison, what it says, and a real run."""

from __future__ import annotations

import dataclasses
import json

from tutor.catalog import Tier, Timing, get_puzzle
from tutor.grading.answer import answer_problem
from tutor.grading.verdict import Criterion
from tutor.progress import Progress
from tutor.quick_check import QuickCheck, quick_check, quick_rounds, reachable_tier
from tutor.stats import Estimate

PUZZLE0 = get_puzzle("puzzle0")  # bronze 5x, silver 10x, gold 20x, all vs baseline
# Like puzzle1: bronze vs the baseline, silver and gold vs other workloads that only a grade times.
MIXED = dataclasses.replace(PUZZLE0, tiers=(
    Tier("bronze", "baseline", 3.0), Tier("silver", "eager", 1.0), Tier("gold", "eager", 1.5),
    Tier("gold", "graph", 1.3)))


def at_least(low: float) -> Estimate:
    return Estimate(median=low * 1.1, low=low, high=low * 1.2, n=10)


def test_a_quarter_of_the_grades_rounds_and_never_fewer_than_ten():
    assert quick_rounds(PUZZLE0) == 10  # 15 rounds in a grade
    assert quick_rounds(dataclasses.replace(PUZZLE0, timing=Timing(rounds=80))) == 20


def test_the_tier_reached_counts_the_lower_bound_and_each_tier_needs_those_below():
    assert reachable_tier(PUZZLE0, "baseline", at_least(4.9)) == ("", "")
    assert reachable_tier(PUZZLE0, "baseline", at_least(19)) == ("silver", "")
    assert reachable_tier(PUZZLE0, "baseline", at_least(21)) == ("gold", "")


def test_a_tier_measured_against_another_workload_is_left_to_a_grade():
    assert reachable_tier(MIXED, "baseline", at_least(4)) == ("bronze", "silver")
    assert reachable_tier(MIXED, "baseline", at_least(2)) == ("", "")
    both = dataclasses.replace(PUZZLE0, tiers=(Tier("bronze", "baseline", 2.0), Tier("bronze", "eager", 1.0)))
    assert reachable_tier(both, "baseline", at_least(3)) == ("", "bronze")
    assert reachable_tier(both, "baseline", at_least(1)) == ("", "")


def check(passed=True, tier="gold", unmeasured="", fair_play=(), answer=None, details=()) -> QuickCheck:
    summary = "Output matches baseline on 3 fresh inputs." if passed else "Output differs from baseline."
    return QuickCheck("puzzle0", Criterion("correctness", passed, summary, list(details)), "baseline",
                      Estimate(38.0, 36.3, 41.5, 10), tier, unmeasured, list(fair_play), answer)


def test_what_a_quick_check_says():
    [correct, speed] = check().findings()
    assert correct == (True, "correct: Output matches baseline on 3 fresh inputs.")
    assert speed == (True, "38.00x vs baseline (95% CI 36.30-41.50, 10 rounds): its lower bound 36.30x would reach "
                           "gold (a tier counts by the lower bound)")
    _, speed = check(tier="bronze", unmeasured="silver").findings()[:2]
    assert speed[1].endswith("would reach bronze (a tier counts by the lower bound); silver also compares against a "
                             "workload only a grade times")
    _, speed = check(tier="").findings()
    assert speed == (False, "38.00x vs baseline (95% CI 36.30-41.50, 10 rounds): below every tier "
                            "(the lower bound counts)")


def test_a_wrong_output_names_the_first_input_that_failed_and_the_speed_does_not_count():
    details = ["input 1: relative L2 error 1.00e-09, ok", "input 2: relative L2 error 5.00e-01, too far (limit 1e-05)"]
    q = check(passed=False, tier="", details=details)
    assert not q.correct
    assert q.findings() == [
        (False, "not correct: Output differs from baseline. "
                "input 2: relative L2 error 5.00e-01, too far (limit 1e-05)"),
        (False, "38.00x vs baseline (95% CI 36.30-41.50, 10 rounds): it counts once the output is right")]


def test_fair_play_and_an_unreadable_answer_are_reported_too(tmp_path):
    caught = Criterion("fair play", False, "Your workload interfered with the grader.",
                       ["it patched time.perf_counter"])
    path = tmp_path / "answer.toml"
    path.write_text("bottleneck = [oops\n")
    q = check(tier="", fair_play=[caught], answer=answer_problem(path))
    assert not q.correct
    findings = q.findings()
    assert (False, "fair play: Your workload interfered with the grader. it patched time.perf_counter") in findings
    assert findings[-1] == (False, "answer.toml, line 1, column 15: not valid TOML (Invalid value). "
                                   "A grade would fail the diagnosis.")


def test_a_real_quick_check_of_a_wrong_workload_on_puzzle0_records_nothing(workspace):
    solution = (PUZZLE0.solution_dir / "workload.py").read_text()
    (workspace.root / "puzzle0" / "workload.py").write_text(solution.replace("clamp_(-3.0, 3.0)", "clamp_(-2.0, 2.0)"))
    events = []
    q = quick_check(workspace, PUZZLE0, events.append)
    assert not q.correct and not q.correctness.passed and q.tier == ""
    assert "too far" in q.findings()[0][1]
    # Still the fast path, just wrong; timed for at least 4 rounds, and at most 10, within its budget.
    assert q.vs == "baseline" and 4 <= q.speedup.n <= 10 and q.speedup.median > 5
    request = json.loads((q.run_dir / "request.json").read_text())
    assert request["mode"] == "check" and request["time"] == ["mine", "baseline"]
    assert request["timing"] == {"warmup": 1, "rounds": 10, "min_rounds": 4, "budget_s": 0.4}
    assert request["correctness"] == {"checks": 1, "output": "any", "judged": False}
    assert [e["stage"] for e in events if e["type"] == "stage"][-1] == "timing"
    progress = Progress(workspace.db_path)
    assert progress.attempts("puzzle0") == [] and progress.latest_profile("puzzle0", "mine") is None


def test_a_check_on_a_gpu_loops_half_a_grades_calls_a_round():
    """The capstone's calls take about 1.3 s a round at a grade's loop length: a check's loops are half as long (its
    grade's stay as they were), so the check answers within 10 s (README's figure, with its command)."""
    from tutor.catalog import get_puzzle
    from tutor.harness.lockstep import LOOP_CALLS
    from tutor.quick_check import quick_timing

    timing = quick_timing(get_puzzle("puzzle27"), "cuda")
    assert timing["loop_calls"] == (2, 4) and timing["min_rounds"] == 4
    assert max(timing["loop_calls"]) * 2 == max(LOOP_CALLS["cuda"])
    assert "loop_calls" not in quick_timing(PUZZLE0, "cpu")


def test_a_puzzles_own_criteria_that_need_no_profile_hold_a_quick_check_back():
    """puzzle23's memory budget reads only the run's result, so watch mode applies it: a workload over the budget
    reaches no tier there either; a grader that reads profiles or answers (puzzle3's) is left to the grade."""
    from tutor.catalog import get_puzzle
    from tutor.grading.puzzle_checks import quick_criteria

    def result(mine_mb: float) -> dict:
        side = lambda mb: {"peak_reserved_bytes": mb * 2**20, "resets": 0, "lowered": 0, "slack": 0.1}  # noqa: E731
        return {"memory": {"allocator_peak": {"mine": side(mine_mb), "theirs": side(1000)}}}

    puzzle23 = get_puzzle("puzzle23", drafts=True)
    [over] = quick_criteria(puzzle23, result(3000))
    assert over.name == "memory budget" and over.summary.startswith("Over the budget")
    assert quick_criteria(puzzle23, result(1050)) == []
    assert quick_criteria(get_puzzle("puzzle3"), {}) == []
