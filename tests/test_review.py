"""The review after solving: locked until a tier or every hint, early only when asked, and recorded."""

from __future__ import annotations

import sqlite3
import tomllib

import pytest

from tutor.catalog import all_puzzles, get_puzzle
from tutor.cli import main
from tutor.progress import Progress
from tutor.review import REVIEW_FILE, ReviewLocked, open_review, solutions

PUZZLE0 = get_puzzle("puzzle0")


def test_locked_before_solving_and_opened_early_only_when_asked(workspace):
    with pytest.raises(ReviewLocked) as locked:
        open_review(workspace, PUZZLE0)
    assert "after all its hints (3 left)" in locked.value.message and "--early" in locked.value.advice
    progress = Progress(workspace.db_path)
    assert progress.review_opened("puzzle0") == ""  # a refusal records nothing
    review = open_review(workspace, PUZZLE0, early=True)
    assert review.opened_as == "early"
    # Solving afterwards does not launder it: the first opening was early, and stays so.
    progress.record_attempt("puzzle0", "h", True, "gold", 40.0, 35.0, {}, workspace.root)
    assert open_review(workspace, PUZZLE0).opened_as == "early"
    assert progress.review_opened("puzzle0") == "early"


def test_a_tier_or_every_hint_opens_it(workspace, tmp_path):
    progress = Progress(workspace.db_path)
    progress.record_attempt("puzzle0", "h", True, "bronze", 6.0, 5.5, {}, tmp_path)
    assert open_review(workspace, PUZZLE0).opened_as == "solved"
    puzzle1 = get_puzzle("puzzle1")
    progress.record_attempt("puzzle1", "h", False, "", 0.9, 0.8, {}, tmp_path)  # a failed attempt opens nothing
    with pytest.raises(ReviewLocked):
        open_review(workspace, puzzle1)
    for _ in puzzle1.hints:
        progress.reveal_hint("puzzle1", len(puzzle1.hints))
    assert open_review(workspace, puzzle1).opened_as == "hints"


def test_it_shows_the_learners_code_as_it_is_now(workspace):
    (workspace.root / "puzzle0" / "workload.py").write_text("# mine, edited\n")
    review = open_review(workspace, PUZZLE0, early=True)
    assert review.mine == "# mine, edited\n"


@pytest.mark.parametrize("puzzle", sorted(all_puzzles()))
def test_every_solution_of_every_puzzle_has_its_notes(puzzle):
    """The reference first, then each alternative puzzle.toml lists: why (its docstring), numbers, a profile."""
    p = get_puzzle(puzzle)
    found = solutions(p)
    assert [s.name for s in found] == ["solution", *p.alternatives]
    assert found[0].tier == p.tiers[-1].name and [s.tier for s in found[1:]] == list(p.alternatives.values())
    for s in found:
        assert s.why and s.measured and s.profile, f"{puzzle}/{s.name} lacks notes"
        assert "\n" not in s.why.split("\n\n")[0]  # paragraphs reflowed for the reader's width
    notes = tomllib.loads((p.folder / REVIEW_FILE).read_text())
    assert set(notes.get("alternatives", {})) <= set(p.alternatives)  # no notes for a solution that is gone


def test_the_cli_says_how_to_open_it_and_shows_every_solution(workspace, monkeypatch, capsys):
    monkeypatch.chdir(workspace.root)
    monkeypatch.setenv("COLUMNS", "100")  # one column: yours, then each solution
    assert main(["review", "puzzle0"]) == 2
    assert "--early" in capsys.readouterr().err
    assert main(["review", "puzzle0", "--early"]) == 0
    out = capsys.readouterr().out
    for title in ("yours", "the reference solution · gold", "alternative: numpy_vectorised · gold",
                  "alternative: compiled · gold", "opened before solving (recorded)"):
        assert title in out


def test_a_db_from_before_reviews_gains_the_table(tmp_path):
    """A progress db written by the first schema (attempts, profiles, hints) opens with every later table."""
    from tutor.progress import MIGRATIONS, sqlite_utils
    path = tmp_path / "progress.db"
    old = sqlite_utils.Database(sqlite3.connect(path))
    MIGRATIONS[0](old)
    old.execute("PRAGMA user_version = 1")
    old.conn.commit()
    old.conn.close()
    progress = Progress(path)
    assert progress.review_opened("puzzle0") == "" and not progress.diagnosed("puzzle0")
    assert progress.db.execute("PRAGMA user_version").fetchone()[0] == len(MIGRATIONS)
