"""A quick check of the learner's files: correctness and a short timing, not a grade.

Watch mode runs it on every save, like rustlings: the harness in check mode with
the learner's workload, the oracle and the first tier's comparison, over a
quarter of a grade's rounds. No memory run, no diagnosis, and nothing recorded:
only `grade` makes an attempt.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from pathlib import Path

from tutor.actions import EventHandler, Register, check_workload_file, new_run_dir, check_request
from tutor.catalog import SHORT_GPU_LOOP_CALLS, Puzzle
from tutor.errors import TutorError
from tutor.grading.answer import AnswerError, answer_problem
from tutor.grading.fair_play import check_fair_play
from tutor.grading.floor import check_floor
from tutor.grading.performance import check_correctness, speedups_vs
from tutor.grading.puzzle_checks import quick_criteria
from tutor.grading.verdict import Criterion
from tutor.machine import require_hardware
from tutor.runner import run_harness
from tutor.stats import Estimate
from tutor.warm import RulerKeeper, warm_mode
from tutor.workspace import Workspace

MIN_ROUNDS = 10  # fewer and the 95% interval of the median is the whole range of the samples
# A check answers within a second or so when the baseline is slow (puzzle0's: 0.1 s a call): it stops
# timing once this is spent, after BUDGET_ROUNDS; the interval it reports is then wider, and says so.
TIMING_BUDGET_S = 0.4
BUDGET_ROUNDS = 4
# Calls in a round's loop on a GPU (a grade's: 4-8, tutor.harness.lockstep.LOOP_CALLS): half as many, so a check of
# a slow call (the capstone's, about 1.3 s a round at a grade's length) answers within 10 s.
QUICK_LOOP_CALLS = {"cuda": SHORT_GPU_LOOP_CALLS}


@dataclass
class QuickCheck:
    puzzle: str
    correctness: Criterion
    vs: str  # what the speed-up is measured against: the first tier's comparison
    speedup: Estimate
    tier: str  # the highest tier the speed-up clears, counting only tiers measured against `vs`
    unmeasured_tier: str = ""  # the next tier, when it compares against a workload only a grade times
    fair_play: list[Criterion] = field(default_factory=list)
    answer: AnswerError | None = None  # answer.toml cannot be read: a grade's diagnosis would fail
    run_dir: Path | None = None
    kept_ruler: bool = False  # the comparators came prepared from the watch session's last check

    @property
    def correct(self) -> bool:
        """Right output, fairly made: only then does the speed-up count."""
        return self.correctness.passed and not self.fair_play

    def findings(self) -> list[tuple[bool, str]]:
        """What the check found, one (good, line) per item, in the learner's words; the faces style them."""
        c, est = self.correctness, self.speedup
        lines = [(c.passed, f"correct: {c.summary}" if c.passed else f"not correct: {c.summary} {_first_wrong(c)}")]
        speed = f"{est.median:.2f}x vs {self.vs} (95% CI {est.low:.2f}-{est.high:.2f}, {est.n} rounds)"
        if not self.correct:
            lines.append((False, f"{speed}: it counts once the output is right"))
        elif self.tier or self.unmeasured_tier:
            # The interval's lower end decides, not the median: say so where a faster median could read as a higher tier.
            reach = [f"its lower bound {est.low:.2f}x would reach {self.tier} (a tier counts by the lower bound)"
                     ] if self.tier else []
            if self.unmeasured_tier:
                reach.append(f"{self.unmeasured_tier} also compares against a workload only a grade times")
            lines.append((True, f"{speed}: {'; '.join(reach)}"))
        else:
            lines.append((False, f"{speed}: below every tier (the lower bound counts)"))
        lines += [(False, f"{f.name}: {f.summary} {f.details[0] if f.details else ''}".rstrip())
                  for f in self.fair_play]
        if self.answer is not None:
            lines.append((False, f"{self.answer.message} A grade would fail the diagnosis."))
        return lines


def _first_wrong(c: Criterion) -> str:
    """The first input or timed call that failed: check_correctness ends a good one with ', ok'."""
    return next((d for d in c.details if not d.endswith(", ok") and not d.startswith("timed calls: all")), "")


def quick_rounds(puzzle: Puzzle) -> int:
    return max(MIN_ROUNDS, puzzle.timing.rounds // 4)


def quick_timing(puzzle: Puzzle, device: str) -> dict:
    """A check's timing request: one warm-up round, rounds until the budget is spent after BUDGET_ROUNDS, and on a
    GPU shorter loops."""
    timing = {"warmup": 1, "rounds": quick_rounds(puzzle), "min_rounds": BUDGET_ROUNDS, "budget_s": TIMING_BUDGET_S}
    if device in QUICK_LOOP_CALLS:
        timing["loop_calls"] = QUICK_LOOP_CALLS[device]
    return timing


def reachable_tier(puzzle: Puzzle, vs: str, est: Estimate) -> tuple[str, str]:
    """The highest tier `est` clears (tiers in order, each needing those below), and the next tier
    when `est` clears its bound but it also compares against a workload (or on a clock) only a grade
    times, else ""."""
    reached = ""
    for name in dict.fromkeys(t.name for t in puzzle.tiers):
        entries = [t for t in puzzle.tiers if t.name == name]
        measured = [t.vs == vs and t.clock == "call" for t in entries]
        if any(m and est.low < t.min_speedup for m, t in zip(measured, entries)):
            return reached, ""
        if not all(measured):
            return reached, name
        reached = name
    return reached, ""


def watch_keeper(ws: Workspace, puzzle: Puzzle) -> RulerKeeper | None:
    """The ruler keeper of this process's watch session on `puzzle`, started in the background unless it runs
    (a cancelled check ends it); None with INFPROF_WARM=0 or INFPROF_KEEP_RULER=0 (every check makes its own
    ruler), and for a puzzle whose checks it does not answer (a serving puzzle's, one on several GPUs). It ends
    with this process."""
    if warm_mode() == "off" or os.environ.get("INFPROF_KEEP_RULER") == "0":
        return None
    if puzzle.no_quick_check or puzzle.hardware.gpus > 1:
        return None
    keeper = RulerKeeper.for_puzzle(ws.root, puzzle.id)
    keeper.start(owner=os.getpid())
    return keeper


def quick_check(ws: Workspace, puzzle: Puzzle, on_event: EventHandler | None = None,
                register: Register | None = None, keeper: RulerKeeper | None = None) -> QuickCheck:
    """Check and time the learner's workload.py briefly; raises RunFailed as a grade would, records nothing.
    `keeper`: a watch session's ruler keeper, which answers the check once it is ready (tutor.harness.keeper)."""
    require_hardware(puzzle)
    check_workload_file(ws, puzzle)
    if puzzle.no_quick_check:
        raise TutorError(puzzle.no_quick_check, f"Grade it: `infprof-tutor grade {puzzle.id}`.")
    vs = puzzle.tiers[0].vs
    request = check_request(ws, puzzle, list(dict.fromkeys(["mine", vs])))
    # One warm-up round and one check before timing: every timed round checks the output again.
    request["timing"].update(quick_timing(puzzle, request["device"]))
    request["correctness"]["checks"] = 1
    if keeper is not None and request["ranks"] == 1:
        request["keeper"] = str(keeper.socket_path)
    run_dir = new_run_dir(ws, puzzle, "check")
    outcome = run_harness(request, run_dir, puzzle.timing.timeout_s, on_event, register)
    result = outcome.result
    correctness = check_correctness(puzzle, result["checks"], result.get("timed_checks", ()))
    est = speedups_vs(result["samples_ms"])[vs]
    fair_play = [*check_fair_play(result.get("violations", ())), *quick_criteria(puzzle, result),
                 *check_floor(result.get("floor"), result["samples_ms"], result.get("gpu_samples_ms", {}))[0]]
    tier, unmeasured = reachable_tier(puzzle, vs, est) if correctness.passed and not fair_play else ("", "")
    answer = answer_problem(ws.editable_path(puzzle, "answer.toml")) if "answer.toml" in puzzle.editable else None
    return QuickCheck(puzzle.id, correctness, vs, est, tier, unmeasured, fair_play, answer, run_dir, outcome.kept)
