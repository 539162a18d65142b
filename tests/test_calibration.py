"""Calibration (issue 74): the puzzle's own reference graded on this machine, kept per card, never the learner's code.

puzzle0 runs on the CPU, so its calibration runs here for real, through the harness a grade uses. The GPU test grades
puzzle4's reference on the lent card the same way.
"""

from __future__ import annotations

import dataclasses
import re
from pathlib import Path

import pytest

from tutor import calibration
from tutor.calibration import Calibration, calibrate, card_for, expectation, kept, puzzle_hash
from tutor.catalog import get_puzzle
from tutor.cli import main
from tutor.machine import Machine, this_machine
from tutor.progress import Progress

ROOT = Path(__file__).parent.parent


@pytest.fixture
def learner_code_that_must_not_run(workspace):
    """puzzle0's editable workload, made to fail loudly wherever it is imported."""
    path = workspace.editable_path(get_puzzle("puzzle0"), "workload.py")
    path.write_text('raise SystemExit("the learner\'s workload ran")\n')
    return path


def test_calibrating_grades_the_puzzles_reference_and_keeps_it_for_this_card(workspace, monkeypatch, capsys,
                                                                              learner_code_that_must_not_run):
    monkeypatch.chdir(workspace.root)
    assert main(["calibrate", "puzzle0"]) == 0
    out = capsys.readouterr().out
    puzzle, machine = get_puzzle("puzzle0"), this_machine()
    kept_here = kept(Progress(workspace.db_path), puzzle, card_for(puzzle, machine))
    # The reference passed and reached a tier although the learner's file cannot even be imported: it never ran.
    # Whether it cleared gold is this busy 2-core machine's measurement (puzzle0's gold read 13.3x at the lower
    # bound once, under the suite's load): verified is read from it, and what is printed says which.
    assert kept_here is not None and kept_here.passed and kept_here.tier
    assert kept_here.verified == (kept_here.speedup_low >= kept_here.top_bar)
    said = "Tiers verified on this card (CPU: " if kept_here.verified else "On this card (CPU: "
    assert said in out
    assert learner_code_that_must_not_run.read_text().startswith("raise SystemExit")
    # Kept: a second call grades nothing (it would fail: calibrate is gone) and says so.
    monkeypatch.setattr(calibration, "calibrate", lambda *a, **k: pytest.fail("calibrated twice"))
    assert main(["calibrate", "puzzle0"]) == 0
    assert "1 of 1 already calibrated on this card" in capsys.readouterr().out
    assert main(["show", "puzzle0"]) == 0
    assert said in capsys.readouterr().out
    assert main(["list"]) == 0
    listed = r"Tiers verified on this card: puzzle0\." if kept_here.verified else r"Short of their top tier.*puzzle0"
    assert re.search(listed, capsys.readouterr().out, re.S)


def test_a_changed_puzzle_or_another_card_is_not_calibrated(workspace):
    puzzle = get_puzzle("puzzle0")
    progress = Progress(workspace.db_path)
    row = Calibration("puzzle0", "CPU: a", puzzle_hash(puzzle), 0.0, True, "gold", "gold", 5.0, 9.0, 8.0)
    progress.record_calibration(dataclasses.asdict(row))
    assert kept(progress, puzzle, "CPU: a") == row
    assert kept(progress, puzzle, "CPU: b") is None
    progress.record_calibration(dataclasses.asdict(dataclasses.replace(row, puzzle_hash="an older puzzle")))
    assert kept(progress, puzzle, "CPU: a") is None


def test_the_hash_covers_what_a_grade_reads_and_not_the_words(tmp_path):
    puzzle = get_puzzle("puzzle0")
    assert calibration._not_graded(Path("MEASUREMENTS.md")) and calibration._not_graded(Path("sweeps/x.py"))
    assert calibration._not_graded(Path("alternatives/a.py")) and not calibration._not_graded(Path("baseline.py"))
    assert not calibration._not_graded(Path("solution/workload.py"))
    assert re.fullmatch(r"[0-9a-f]{16}", puzzle_hash(puzzle))


def test_what_the_learner_is_told_on_each_outcome():
    puzzle = get_puzzle("puzzle4")
    top = puzzle.tiers[-1]
    reached = Calibration("puzzle4", "NVIDIA L4", "h", 0.0, True, top.name, top.name, top.min_speedup, 9.1, 8.7)
    assert reached.verified and "Tiers verified on this card (NVIDIA L4)" in expectation(puzzle, reached, "NVIDIA L4")
    lower = puzzle.tiers[0].name
    short = dataclasses.replace(reached, tier=lower, speedup=top.min_speedup * 0.9, speedup_low=top.min_speedup * 0.8)
    said = expectation(puzzle, short, "NVIDIA L4")
    assert not short.verified and f"reaches {lower}" in said and f"{top.name} needs {top.min_speedup:g}x" in said
    assert "The bars are the same on every card" in said
    crashed = dataclasses.replace(reached, passed=False, tier="", speedup=None, speedup_low=None,
                                  why_not="The workload ran out of GPU memory.")
    assert "did not pass its own grade (The workload ran out of GPU memory.)" in expectation(puzzle, crashed, "L4")
    assert "infprof-tutor calibrate puzzle4" in expectation(puzzle, None, "NVIDIA L4")
    assert [calibration.short_expectation(c) for c in (reached, short, crashed, None)] == [
        f"tiers verified on this card ({top.name})", f"on this card the reference reaches {lower}",
        "on this card the reference fails", "tiers not checked on this card (calibrate)"]


def test_a_gpu_puzzle_is_calibrated_on_the_first_gpus_name():
    machine = Machine(True, 1, (9.0,), gpus=(this_machine_gpu("NVIDIA H100 80GB HBM3"),))
    assert card_for(get_puzzle("puzzle4"), machine) == "NVIDIA H100 80GB HBM3"
    assert card_for(get_puzzle("puzzle0"), machine).startswith("CPU: ")


def this_machine_gpu(name: str):
    from tutor.machine import Gpu

    return Gpu(name, 9.0, 80.0, "580")


def test_no_grade_reads_a_calibration():
    """A calibration's figures tell the learner what to expect and move no bar: nothing on a grade's path (the
    harness, the grading package, actions, the graders) reads them, so editing them into the database passes
    nothing."""
    grading_path = [*sorted((ROOT / "tutor" / "grading").glob("*.py")), *sorted((ROOT / "tutor" / "harness").glob("*.py")),
                    *sorted((ROOT / "graders").glob("*.py")), ROOT / "tutor" / "actions.py", ROOT / "tutor" / "runner.py",
                    ROOT / "tutor" / "reference.py"]
    for path in grading_path:
        text = path.read_text()
        assert "calibration" not in text, f"{path.relative_to(ROOT)} reads a calibration"


@pytest.mark.gpu
def test_the_gpu_calibrates_a_puzzles_reference(workspace):
    """puzzle4's reference graded on the lent card, as `infprof-tutor calibrate puzzle4` does."""
    puzzle, machine = get_puzzle("puzzle4"), this_machine()
    card = card_for(puzzle, machine)
    kept_here = calibrate(Progress(workspace.db_path), puzzle, card)
    print(f"puzzle4 on {card}: {kept_here}")
    assert kept_here.passed and kept_here.speedup is not None and kept(Progress(workspace.db_path), puzzle, card)
