"""`infprof-tutor diagnose` as a learner runs it after the puzzles, on the CPU: a real command profiled in a
subprocess, a puzzle's workload through the puzzle's own profile, the report kept in the history, and a clear answer
for a command it cannot run (the app's dialog: tests/test_app.py)."""

from __future__ import annotations

import os
import sys
from pathlib import Path

import pytest

from tutor.cli import main
from tutor.progress import Progress

ROOT = Path(__file__).resolve().parents[1]
# A host-bound loop: thousands of tiny operators, a few microseconds of dispatch each.
TINY_OPS = "import torch\nx = torch.zeros(8)\nfor _ in range(5000):\n    x = x + 1\nprint(float(x.sum()))\n"


@pytest.fixture
def in_workspace(workspace, monkeypatch):
    monkeypatch.chdir(workspace.root)
    return workspace


def test_a_python_command_is_profiled_diagnosed_and_kept(in_workspace, tmp_path, capsys):
    script = tmp_path / "serve.py"
    script.write_text(TINY_OPS)
    assert main(["diagnose", "--", sys.executable, str(script)]) == 0
    out = capsys.readouterr().out
    assert "1. cpu_overhead, at stake:" in out and "cpu.ops_per_iter = 5,00" in out
    assert "Taught by puzzle0" in out
    kept = Progress(in_workspace.db_path).workload_diagnoses()
    assert len(kept) == 1 and kept[0]["target"].endswith("serve.py")
    assert kept[0]["report"]["findings"][0]["bottleneck"] == "cpu_overhead"
    assert main(["diagnose", "--history", "1"]) == 0
    assert "cpu_overhead, at stake:" in capsys.readouterr().out


@pytest.mark.parametrize("command, says", [
    (["ls", "-l"], "diagnose runs Python commands"),
    ([sys.executable, "/nowhere/serve.py"], "No script at /nowhere/serve.py"),
    ([sys.executable, "-c", "pass"], "No script at -c"),
])
def test_a_command_it_cannot_run_gets_a_clear_answer(in_workspace, capsys, command, says):
    assert main(["diagnose", "--", *command]) == 2
    assert says in capsys.readouterr().err.replace("\n", " ").replace("│", "")


def test_a_command_that_fails_says_so_with_its_output(in_workspace, tmp_path, capsys):
    script = tmp_path / "broken.py"
    script.write_text("import torch\nraise RuntimeError('CUDA out of memory (a test)')\n")
    assert main(["diagnose", "--", sys.executable, str(script)]) == 2
    err = capsys.readouterr().err
    assert "failed under the PyTorch profiler (exit status 1)" in err and "out of memory (a test)" in err
    assert Progress(in_workspace.db_path).workload_diagnoses() == []


@pytest.mark.usefixtures("small_catalog")
def test_a_workload_in_the_puzzle_contract_is_diagnosed_through_its_puzzles_profile(in_workspace, capsys):
    """puzzle0's baseline, profiled as the puzzle profiles it: thousands of operators a call. Whether each is fast
    enough to be dispatch rather than math (cpu.us_per_op, 50 us at most) is the machine's to say under load (a
    loaded 2-core CI read more once), so the report is held to the rule on the numbers its own profile read."""
    from tutor.metrics import ProfileMetrics

    assert main(["diagnose", "--puzzle", "puzzle0", "--which", "baseline"]) == 0
    out = capsys.readouterr().out
    [kept] = Progress(in_workspace.db_path).workload_diagnoses()
    assert kept["target"] == "puzzle0 (baseline)"
    values = ProfileMetrics.from_json((Path(kept["run_dir"]) / "metrics.json").read_text()).values
    ops, call_us = values["cpu.ops_per_iter"], values["cpu.time_per_iter_us"]
    assert ops >= 1000
    assert ("1. cpu_overhead, at stake:" in out) == (call_us / ops <= 50), (ops, call_us, out)


def test_kernels_without_nsight_compute_says_what_to_do(in_workspace, tmp_path, capsys, monkeypatch):
    script = tmp_path / "serve.py"
    script.write_text(TINY_OPS)
    monkeypatch.setenv("PATH", "/nonexistent")
    monkeypatch.setattr("tutor.profilers.ncu.SEARCH", ())
    assert main(["diagnose", "--kernels", "--", sys.executable, str(script)]) == 2
    assert "Nsight Compute (ncu) is not installed" in capsys.readouterr().err


def test_marked_steps_alone_are_the_window(in_workspace, tmp_path, capsys):
    """With --marked only the steps the command wraps in record_function("infprof:iter") count: 2000 operators a
    step; without it the whole command is one window, and the report says its start-up is in it."""
    script = tmp_path / "steps.py"
    script.write_text("import torch\nx = torch.zeros(8)\nfor _ in range(3):\n"
                      "    with torch.profiler.record_function('infprof:iter'):\n"
                      "        for _ in range(2000):\n            x = x + 1\n")
    assert main(["diagnose", "--marked", "--", sys.executable, str(script)]) == 0
    marked = capsys.readouterr().out
    assert "cpu.ops_per_iter = 2,000:" in marked and "its start-up included" not in marked
    assert " a step (" in marked and " of the run (" not in marked  # what the time at stake is a share of
    script.write_text(TINY_OPS)
    assert main(["diagnose", "--", sys.executable, str(script)]) == 0
    whole = capsys.readouterr().out.replace("\n", " ")
    assert "its start-up included" in whole and " of the run (" in whole and " a call (" not in whole


def test_kernels_targets_the_heaviest_kernels_and_falls_back_to_the_first_ones(in_workspace, tmp_path, capsys,
                                                                                 monkeypatch):
    """A stand-in for ncu on PATH (this machine has no GPU): it profiles nothing when given a kernel-name filter, as
    ncu does when no kernel matches, and a recorded profile (puzzle9's baseline, an H100's) without one. diagnose
    asks for the torch profile's heaviest kernels first, then the first ones, and says which it got."""
    from tutor.diagnose.capture import heaviest_kernels, kernel_filter

    assert heaviest_kernels([{"name": "a::small", "total_us": 1.0}, {"name": "at::native::big", "total_us": 9.0}]) \
        == ["big", "small"]
    assert kernel_filter(["big", "a.b"]) == ["--kernel-name-base", "demangled", "--kernel-name", r"regex:big|a\.b"]
    fake = tmp_path / "bin" / "ncu"
    fake.parent.mkdir()
    recorded = ROOT / "challenges" / "puzzle9" / "recordings" / "baseline_ncu.csv"
    fake.write_text(f"""#!/bin/sh
case "$*" in
  *--import*) report=$(echo "$*" | sed 's/.*--import \\([^ ]*\\).*/\\1/'); [ -f "$report" ] || exit 1; cat {recorded} ;;
  *--kernel-name*) echo "==WARNING== No kernels were profiled." ;;
  *) report=$(echo "$*" | sed 's/.*--export \\([^ ]*\\).*/\\1/'); touch "$report.ncu-rep" ;;
esac
""")
    fake.chmod(0o755)
    monkeypatch.setenv("PATH", f"{fake.parent}:{os.environ['PATH']}")
    # The torch profile of a CPU run names no GPU kernel: as if it had named one no kernel of ncu's matches.
    monkeypatch.setattr("tutor.diagnose.capture.heaviest_kernels", lambda kernels: ["big_kernel"])
    script = tmp_path / "serve.py"
    script.write_text(TINY_OPS)
    assert main(["diagnose", "--kernels", "--", sys.executable, str(script)]) == 0
    out = " ".join(capsys.readouterr().out.split())
    assert "register_spills" in out and "the command's first 20 kernels (none of its heaviest matched" in out
    log = next(in_workspace.runs_dir.glob("*-diagnose-*")) / "ncu.log"
    assert "No kernels were profiled" not in log.read_text()  # the second run's log: the first's was the filtered
