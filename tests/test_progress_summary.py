"""Where a learner stands over the curriculum: `infprof-tutor progress`, `show` after gold, and the app's line."""

from __future__ import annotations

from pathlib import Path

from tutor.catalog import all_puzzles
from tutor.progress import Progress
from tutor.progress_summary import SITTING_GAP_S, active_seconds, next_puzzle, summarize

PUZZLES = list(all_puzzles().values())


def solve(progress: Progress, puzzle: str, tier: str, speedup: float = 2.0) -> None:
    progress.record_attempt(puzzle, "h", True, tier, speedup, speedup * 0.9, {}, Path("/tmp"))


def test_time_on_record_leaves_the_breaks_between_sittings_out():
    # 10 min, then a night away, then 5 min: 15 min of work, not the night.
    assert active_seconds([0, 600, 600 + SITTING_GAP_S + 1, 600 + SITTING_GAP_S + 301]) == 900
    assert active_seconds([]) == 0 == active_seconds([5.0])


def test_the_summary_counts_tiers_and_takes_the_next_puzzle_this_machine_runs(workspace):
    progress = Progress(workspace.db_path)
    solve(progress, "puzzle0", "gold")
    solve(progress, "puzzle1", "silver")
    progress.record_attempt("puzzle4", "h", False, "", 0.9, 0.8, {}, Path("/tmp"))  # tried, not solved
    runs_here = {p.id: p.id in ("puzzle0", "puzzle1", "puzzle5") for p in PUZZLES}
    summary = summarize(progress, PUZZLES, runs_here)
    assert (summary.total, summary.solved, summary.tiers) == (len(PUZZLES), 2, {"gold": 1, "silver": 1, "bronze": 0})
    assert summary.next_puzzle.id == "puzzle5"  # puzzle4 is unsolved but does not run here
    lines = summary.lines()
    assert lines[0] == f"Solved 2 of {len(PUZZLES)} (1 gold, 1 silver)."
    assert lines[-1] == "  infprof-tutor show puzzle5" and "runs here" in lines[-2]


def test_with_nothing_left_here_it_sends_the_learner_to_study_then_to_gold():
    statuses = {p.id: type("S", (), {"status": "solved", "tier": "gold"})() for p in PUZZLES}
    statuses["puzzle9"] = type("S", (), {"status": "new", "tier": ""})()
    chosen, why = next_puzzle(PUZZLES, statuses, {p.id: False for p in PUZZLES})
    assert chosen.id == "puzzle9" and "study" in why
    statuses["puzzle9"] = type("S", (), {"status": "solved", "tier": "silver"})()
    chosen, why = next_puzzle(PUZZLES, statuses, {p.id: True for p in PUZZLES}, after="puzzle0")
    assert chosen.id == "puzzle9" and "gold is still open" in why
    statuses["puzzle9"] = type("S", (), {"status": "solved", "tier": "gold"})()
    assert next_puzzle(PUZZLES, statuses, {})[0] is None


def test_the_cli_says_it_and_show_after_gold_names_what_is_next(workspace, monkeypatch, capsys):
    from tutor.cli import main

    monkeypatch.chdir(workspace.root)
    assert main(["progress"]) == 0
    out = capsys.readouterr().out
    assert out.startswith(f"Solved 0 of {len(PUZZLES)}.") and "infprof-tutor show puzzle0" in out
    solve(Progress(workspace.db_path), "puzzle0", "gold")
    assert main(["show", "puzzle0"]) == 0
    out = capsys.readouterr().out
    assert "Solved at gold. Next: " in out and "Then: infprof-tutor profile" not in out
    assert main(["show", "puzzle1"]) == 0
    assert "Then: infprof-tutor profile puzzle1" in capsys.readouterr().out
