"""Puzzle-specific checks: a module `graders/<name>.py` named by puzzle.toml's `grader`.

Such a module defines `criteria(puzzle, result) -> list[Criterion]`, where
result is the harness's raw check result (samples, correctness checks, memory).
"""

from __future__ import annotations

import importlib

from tutor.catalog import Puzzle
from tutor.grading.verdict import Criterion


def puzzle_criteria(puzzle: Puzzle, result: dict) -> list[Criterion]:
    if not puzzle.grader:
        return []
    module = importlib.import_module(f"graders.{puzzle.grader}")
    return list(module.criteria(puzzle, result))
