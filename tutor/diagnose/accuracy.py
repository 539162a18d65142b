"""The diagnosis checked as a classifier: on every puzzle's recorded baseline, whose bottleneck is known, the class
ranked first must be one the puzzle accepts; on its recorded reference solutions, the class it teaches must no
longer rank first."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from tutor.catalog import Puzzle
from tutor.diagnose.recorded import recorded_profile
from tutor.diagnose.report import diagnose
from tutor.diagnose.rules import Profile
from tutor.profilers import ncu


@dataclass
class Case:
    puzzle: str
    profile: str  # "baseline", or the recording of a reference
    expected: tuple[str, ...]  # what must rank first (baseline), or must not (reference)
    ranked: list[str]

    @property
    def right(self) -> bool:
        if self.profile == "baseline":
            return bool(self.ranked) and self.ranked[0] in self.expected
        return not self.ranked or self.ranked[0] not in self.expected


def baseline_cases(puzzles: list[Puzzle]) -> list[Case]:
    return [Case(p.id, "baseline", p.diagnosis.accepted, diagnose(recorded_profile(p)).ranked) for p in puzzles]


def reference_cases(puzzles: list[Puzzle], recordings: Path) -> list[Case]:
    """The reference solutions' Nsight Compute recordings (`PUZZLE_reference_ncu.csv` under `recordings`)."""
    cases = []
    for p in puzzles:
        csv = recordings / f"{p.id}_reference_ncu.csv"
        if csv.is_file():
            metrics = ncu.extract(csv)
            cases.append(Case(p.id, "reference (ncu)", p.diagnosis.accepted,
                              diagnose(Profile(metrics.values, metrics.kernels)).ranked))
    return cases
