"""Puzzle-specific checks: a module `graders/<name>.py` named by puzzle.toml's `grader`, a kernel
puzzle's [kernel_evidence] (tutor.grading.kernel_evidence) where puzzle.toml asks for it, and a capstone's
later stages (tutor.grading.stages).

Such a module defines `criteria(puzzle, result, answer_path, profiles) -> list[Criterion]`,
where result is the harness's raw check result (samples, correctness checks, the timed
process's memory, the spec's facts), answer_path the learner's answer.toml, and profiles
the learner's own newest profiles (for evidence a puzzle asks for beyond the diagnosis).
"""

from __future__ import annotations

import importlib
from dataclasses import dataclass, field
from pathlib import Path

from tutor.catalog import Puzzle
from tutor.grading import stages
from tutor.grading.answer import readable_answer
from tutor.grading.verdict import Criterion
from tutor.metrics import ProfileMetrics


@dataclass
class LearnerProfiles:
    """The newest profile per (workload, profiler), as progress rows, and the hash of the code being graded."""

    rows: dict[tuple[str, str], dict] = field(default_factory=dict)
    code_hash: str = ""
    # Every profile the learner ran of their own workload, newest first: a capstone's later stages cite them.
    own_history: list[dict] = field(default_factory=list)

    def newest(self, workload: str, profiler: str) -> ProfileMetrics | None:
        row = self.rows.get((workload, profiler))
        return ProfileMetrics.from_json(row["metrics_json"]) if row else None

    def is_current(self, workload: str, profiler: str) -> bool:
        """Whether that profile ran the very code being graded (always true for the puzzle's own workloads)."""
        row = self.rows.get((workload, profiler))
        return bool(row) and (workload != "mine" or row["code_hash"] == self.code_hash)


def grader_module(puzzle: Puzzle):
    """The puzzle's `graders/<name>.py`, or None when it has no checks of its own."""
    return importlib.import_module(f"graders.{puzzle.grader}") if puzzle.grader else None


def puzzle_criteria(puzzle: Puzzle, result: dict, answer_path: Path | None = None,
                    profiles: LearnerProfiles | None = None) -> list[Criterion]:
    profiles = profiles or LearnerProfiles()
    module = grader_module(puzzle)
    found = list(module.criteria(puzzle, result, answer_path, profiles)) if module else []
    if puzzle.kernel_evidence_for:  # a kernel puzzle's [kernel_evidence] (tutor.grading.kernel_evidence)
        from tutor.grading import kernel_evidence

        found.append(kernel_evidence.criterion(puzzle, kernel_evidence.cited_table(answer_path), profiles))
    if puzzle.stages:  # a capstone's later stages (tutor.grading.stages)
        found.extend(stages.stage_criteria(puzzle, readable_answer(answer_path), profiles.own_history))
    return found


def quick_criteria(puzzle: Puzzle, result: dict) -> list[Criterion]:
    """The puzzle's own criteria a quick check can judge (a grader that marks itself QUICK: it reads only the run's
    result, no profile, no answer), those that failed: what watch mode must not call a tier."""
    module = grader_module(puzzle)
    if module is None or not getattr(module, "QUICK", False):
        return []
    return [c for c in module.criteria(puzzle, result, None, LearnerProfiles()) if not c.passed]
