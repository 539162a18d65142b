"""The CLI as a learner uses it, on puzzle0 (CPU), with real subprocess runs."""

from __future__ import annotations

import subprocess
import sys

import pytest

from tutor.cli import main
from tutor.progress import Progress


@pytest.fixture
def in_workspace(workspace, monkeypatch):
    monkeypatch.chdir(workspace.root)
    return workspace


def test_init_copies_puzzles_and_never_overwrites_edits(tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)
    assert main(["init", "ws"]) == 0
    workload = tmp_path / "ws" / "puzzle0" / "workload.py"
    assert "def forward" in workload.read_text()
    workload.write_text("# my edits\n")
    assert main(["init", "ws"]) == 0
    assert workload.read_text() == "# my edits\n"


def test_commands_outside_a_workspace_say_how_to_make_one(tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)
    assert main(["list"]) == 2
    assert "infprof-tutor init" in capsys.readouterr().err


def test_list_and_show(in_workspace, capsys):
    assert main(["list"]) == 0
    out = capsys.readouterr().out
    assert "puzzle0" in out and "new" in out
    assert main(["show", "puzzle0"]) == 0
    out = capsys.readouterr().out
    assert "feature scaler" in out.lower() and "bronze" in out.lower()


def test_unknown_puzzle_is_a_usage_error(in_workspace, capsys):
    assert main(["show", "nope"]) == 2
    assert "Known puzzles" in capsys.readouterr().err


def test_list_imports_neither_torch_nor_pandas(in_workspace):
    code = ("import sys; from tutor.cli import main; rc = main(['list']); "
            "bad = [m for m in ('torch', 'pandas', 'numpy', 'textual') if m in sys.modules]; "
            "sys.exit(f'imported {bad}' if bad else rc)")
    done = subprocess.run([sys.executable, "-c", code], cwd=in_workspace.root, capture_output=True, text=True)
    assert done.returncode == 0, done.stderr


def test_hints_one_at_a_time(in_workspace, capsys):
    for expected in ("Hint 1/3", "Hint 2/3", "Hint 3/3", "All 3 hints are out"):
        assert main(["hint", "puzzle0"]) == 0
        assert expected in capsys.readouterr().out


def test_reset_restores_and_keeps_a_backup(in_workspace, capsys):
    workload = in_workspace.root / "puzzle0" / "workload.py"
    workload.write_text("broken")
    assert main(["reset", "puzzle0"]) == 0
    assert "def forward" in workload.read_text()
    assert (workload.parent / "workload.py.bak").read_text() == "broken"


def test_grading_the_untouched_baseline_fails_and_is_recorded(in_workspace, capsys):
    assert main(["grade", "puzzle0"]) == 1
    out = capsys.readouterr().out
    assert "PASS correctness" in out and "FAIL performance" in out and "FAIL diagnosis" in out
    assert "infprof-tutor hint puzzle0" in out
    [attempt] = Progress(in_workspace.db_path).attempts("puzzle0")
    assert attempt["passed"] == 0 and 0.7 < attempt["speedup"] < 1.4


def test_a_crashing_workload_is_a_failed_attempt_with_its_output(in_workspace, capsys):
    (in_workspace.root / "puzzle0" / "workload.py").write_text(
        "def prepare(w, d):\n    return w\ndef forward(s, x):\n    print('last words')\n    raise KeyError('oops')\n")
    assert main(["grade", "puzzle0"]) == 1
    err = capsys.readouterr().err
    assert "KeyError" in err and "last words" in err and "Traceback" not in err.split("Last output")[0]
    [attempt] = Progress(in_workspace.db_path).attempts("puzzle0")
    assert attempt["passed"] == 0 and "workload_error" in attempt["verdict_json"]
