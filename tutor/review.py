"""A review after solving: the reference and the honest alternatives beside the learner's own code.

Locked until the learner has a tier or has revealed every hint; opened earlier only when asked
(`--early`), and recorded as such. Each solution shows its code, why it is fast (its module
docstring) and, from the puzzle's review.toml, what it measured and what profile would show it.
"""

from __future__ import annotations

import ast
import tomllib
from dataclasses import dataclass

from tutor.catalog import Puzzle
from tutor.errors import TutorError
from tutor.progress import Progress
from tutor.workspace import Workspace

REVIEW_FILE = "review.toml"


@dataclass(frozen=True)
class Solution:
    name: str  # "solution" or the alternative's name
    title: str
    tier: str  # the tier its measurements note expects
    code: str
    why: str
    measured: str
    profile: str


@dataclass(frozen=True)
class Review:
    puzzle: str
    mine: str  # the learner's workload.py as it is now
    solutions: list[Solution]
    opened_as: str  # "solved", "hints" or "early": what unlocked it the first time


class ReviewLocked(TutorError):
    pass


def unlocked_by(progress: Progress, puzzle: Puzzle) -> str:
    """'solved' (a tier reached), 'hints' (every hint revealed) or '' (still locked)."""
    if progress.status(puzzle.id).tier:
        return "solved"
    if puzzle.hints and progress.hints_revealed(puzzle.id) >= len(puzzle.hints):
        return "hints"
    return ""


def read_notes(puzzle: Puzzle) -> dict:
    """review.toml: per solution, what it measured and what profile would have shown it."""
    path = puzzle.folder / REVIEW_FILE
    try:
        return tomllib.loads(path.read_text())
    except FileNotFoundError:
        return {}
    except tomllib.TOMLDecodeError as e:
        raise TutorError(f"{path} cannot be read: {e}", "Fix the puzzle's review notes.") from e


def solutions(puzzle: Puzzle) -> list[Solution]:
    """The reference first, then the honest alternatives in the order puzzle.toml lists them."""
    notes = read_notes(puzzle)
    top = puzzle.tiers[-1].name if puzzle.tiers else ""
    found = [_solution(puzzle, "solution", "the reference solution", top, puzzle.solution_dir / "workload.py",
                       notes.get("solution", {}))]
    for name, tier in puzzle.alternatives.items():
        found.append(_solution(puzzle, name, f"alternative: {name}", tier, puzzle.alternative_path(name),
                               notes.get("alternatives", {}).get(name, {})))
    return found


def _solution(puzzle: Puzzle, name: str, title: str, tier: str, path, note: dict) -> Solution:
    code = path.read_text()
    try:
        why = ast.get_docstring(ast.parse(code)) or ""
    except SyntaxError:
        why = ""
    return Solution(name, title, tier, code, reflow(why), note.get("measured", ""), note.get("profile", ""))


def reflow(text: str) -> str:
    """A docstring's paragraphs, each on one line: the reader's width wraps them."""
    return "\n\n".join(" ".join(p.split()) for p in text.split("\n\n") if p.strip())


def open_review(ws: Workspace, puzzle: Puzzle, early: bool = False) -> Review:
    """The review, if it is unlocked (or `early`, which is recorded); raises ReviewLocked otherwise."""
    progress = Progress(ws.db_path)
    opened = progress.review_opened(puzzle.id)
    reason = opened or unlocked_by(progress, puzzle)
    if not reason:
        if not early:
            left = len(puzzle.hints) - progress.hints_revealed(puzzle.id)
            raise ReviewLocked(
                f"The review of {puzzle.id} opens once you reach a tier, or after all its hints ({left} left).",
                f"To see it now anyway: infprof-tutor review {puzzle.id} --early (your record will say you did).")
        reason = "early"
    if not opened:
        progress.record_review(puzzle.id, reason)
    mine = ws.editable_path(puzzle, "workload.py")
    return Review(puzzle.id, mine.read_text() if mine.is_file() else "", solutions(puzzle), opened or reason)
