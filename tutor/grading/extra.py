"""Puzzle-specific checks: a module `graders/<name>.py` named by puzzle.toml's `grader`.

Such a module defines `criteria(puzzle, result, answer_path) -> list[Criterion]`, where
result is the harness's raw check result (samples, correctness checks, memory, the
memory run, the spec's facts) and answer_path the learner's answer.toml.
"""

from __future__ import annotations

import importlib
from pathlib import Path

from tutor.catalog import Puzzle
from tutor.grading.verdict import Criterion


def puzzle_criteria(puzzle: Puzzle, result: dict, answer_path: Path | None = None) -> list[Criterion]:
    if not puzzle.grader:
        return []
    module = importlib.import_module(f"graders.{puzzle.grader}")
    return list(module.criteria(puzzle, result, answer_path))
