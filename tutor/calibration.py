"""What a puzzle's tiers mean on the learner's own card: the puzzle's reference graded there, once per card and kept.

A puzzle's tiers were set on a Hopper card; on another card the reference itself may fall short of gold. Calibration
grades the puzzle's own files (its reference solution, installed in a scratch workspace of its own) as a learner's
grade would, and keeps the tier it reached in the progress database. It moves no bar: every grade, on every card, is
held to the puzzle's tiers, so a calibration's figures, edited or not, pass nothing; they tell the learner what to
expect. The learner's workload never runs in it (their workspace is only where the figures are kept).
"""

from __future__ import annotations

import hashlib
import shutil
import time
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from tutor.catalog import Puzzle
    from tutor.machine import Machine
    from tutor.progress import Progress

# What a puzzle's grade does not read: its words and its measurement logs (a story's rewrite keeps a calibration).
NOT_GRADED = ("*.md", "__pycache__", "sweeps", "recordings", "alternatives", "cheats", "review.toml")


@dataclass(frozen=True)
class Calibration:
    puzzle: str
    card: str  # nvidia-smi's name of the GPU (a CPU puzzle's: the processor's)
    puzzle_hash: str  # the puzzle's graded files when calibrated: a changed puzzle calibrates again
    created_at: float
    passed: bool  # the reference passed its grade here (correctness, diagnosis, rules)
    tier: str  # the tier it reached here ("": none)
    top_tier: str
    top_bar: float  # the top tier's speed-up bar, the puzzle's own
    speedup: float | None  # the reference's speed-up on the top tier's comparator and clock (median)
    speedup_low: float | None  # the lower bound of its interval: what a tier is read from
    why_not: str = ""  # the first criterion it failed, where it did

    @property
    def verified(self) -> bool:
        """Every tier reachable here: the reference reached the top one."""
        return self.passed and self.tier == self.top_tier


def card_for(puzzle: Puzzle, machine: Machine) -> str:
    """The card this machine grades `puzzle` on: the first GPU's name, or for a CPU puzzle the processor's."""
    if puzzle.hardware.device == "cpu":
        return "CPU: " + machine.cpu
    return machine.gpus[0].name if machine.gpus else "a GPU nvidia-smi did not name"


def puzzle_hash(puzzle: Puzzle) -> str:
    """A digest of the files a grade of the puzzle reads, its grader's module included."""
    from tutor.catalog import GRADERS_DIR

    digest = hashlib.sha256()
    files = [f for f in sorted(puzzle.folder.rglob("*")) if f.is_file() and not _not_graded(f.relative_to(puzzle.folder))]
    grader = GRADERS_DIR / f"{puzzle.grader}.py" if puzzle.grader else None
    for f in files + ([grader] if grader and grader.is_file() else []):
        digest.update(f.name.encode() + b"\0" + f.read_bytes() + b"\0")
    return digest.hexdigest()[:16]


def _not_graded(relative: Path) -> bool:
    return any(part.match(pattern) for part in (relative, *relative.parents) for pattern in NOT_GRADED
               if str(part) != ".")


def kept(progress: Progress, puzzle: Puzzle, card: str) -> Calibration | None:
    """This card's calibration of the puzzle as it is now (None: none yet, or the puzzle changed since)."""
    row = progress.calibration(puzzle.id, card)
    if row is None or row["puzzle_hash"] != puzzle_hash(puzzle):
        return None
    return Calibration(**{**row, "passed": bool(row["passed"])})


def calibrate(progress: Progress, puzzle: Puzzle, card: str, on_event=None) -> Calibration:
    """Grade the puzzle's reference in a scratch workspace of its own and keep what it reached on `card`."""
    from tutor import actions
    from tutor.errors import EnvironmentProblem
    from tutor.reference import ready_to_grade
    from tutor.runner import RunFailed
    from tutor.workspace import scratch_workspace

    top = puzzle.tiers[-1]
    scratch = scratch_workspace("infprof-calibrate-")
    try:
        ready_to_grade(scratch, puzzle, "reference")
        verdict = actions.grade(scratch, puzzle, on_event)
    except RunFailed as e:
        if isinstance(e, EnvironmentProblem):  # this machine's, not the card's: nothing to keep
            raise
        verdict = None  # the reference crashed, ran out of memory or hung on this card: that is its calibration
        why_not = e.message
    finally:
        shutil.rmtree(scratch.root.parent, ignore_errors=True)
    estimate = {}
    if verdict is not None:
        failed = next((c for c in verdict.criteria if not c.passed), None)
        why_not = f"{failed.name}: {failed.summary}" if failed else ""
        estimate = (verdict.gpu_speedups if top.clock == "gpu" else verdict.speedups).get(top.vs) or {}
    calibration = Calibration(puzzle.id, card, puzzle_hash(puzzle), time.time(), bool(verdict and verdict.passed),
                              verdict.tier if verdict else "", top.name, top.min_speedup, estimate.get("median"),
                              estimate.get("low"), why_not)
    progress.record_calibration(asdict(calibration))
    return calibration


def as_reference(on_event):
    """Harness events of a calibration, told as the reference's: the harness calls the graded slot "your workload"."""
    def told(event: dict) -> None:
        on_event({key: value.replace("your workload", "the reference") if isinstance(value, str) else value
                  for key, value in event.items()})
    return told


def here(progress: Progress, puzzles: list[Puzzle], machine: Machine) -> dict[str, Calibration | None]:
    """Each puzzle this machine runs, by its calibration on this card (None: not yet checked)."""
    from tutor.machine import readiness

    return {p.id: kept(progress, p, card_for(p, machine)) for p in puzzles if readiness(p, machine).ok}


def line_here(progress: Progress, puzzle: Puzzle, machine: Machine, short: bool = False) -> str:
    """`expectation`'s line for the puzzle on this card (`short`: a narrow panel's); "" where it does not run here."""
    if puzzle.id not in (found := here(progress, [puzzle], machine)):
        return ""
    if short:
        return short_expectation(found[puzzle.id])
    return expectation(puzzle, found[puzzle.id], card_for(puzzle, machine))


def short_expectation(calibration: Calibration | None) -> str:
    """`expectation` in a few words, for the app's side panel (its details: `infprof-tutor show`)."""
    if calibration is None:
        return "tiers not checked on this card (calibrate)"
    if calibration.verified:
        return f"tiers verified on this card ({calibration.top_tier})"
    if not calibration.passed and not calibration.tier:
        return "on this card the reference fails"
    return f"on this card the reference reaches {calibration.tier or 'no tier'}"


def expectation(puzzle: Puzzle, calibration: Calibration | None, card: str) -> str:
    """One line: whether the puzzle's tiers were verified on this card, and what to expect where they were not."""
    if calibration is None:
        return (f"Tiers not yet checked on this card ({card}): `infprof-tutor calibrate {puzzle.id}` grades the "
                f"puzzle's own reference here.")
    top, bar = calibration.top_tier, calibration.top_bar
    if calibration.verified:
        return f"Tiers verified on this card ({card}): the reference reaches {top} here ({_speedup(calibration)})."
    if not calibration.passed and not calibration.tier:
        return (f"On this card ({card}) the reference did not pass its own grade ({calibration.why_not}): "
                f"its tiers may be out of reach here.")
    reached = calibration.tier or "no tier"
    return (f"On this card ({card}) the reference reaches {reached} ({_speedup(calibration)}; {top} needs "
            f"{bar:g}x): {top} may be out of reach here. The bars are the same on every card.")


def _speedup(calibration: Calibration) -> str:
    if calibration.speedup is None:
        return "no speed-up measured"
    low = f", at least {calibration.speedup_low:.2f}x" if calibration.speedup_low is not None else ""
    return f"{calibration.speedup:.2f}x{low}"
