"""The CLI as a learner uses it, on puzzle0 (CPU), with real subprocess runs."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

from tutor.machine import this_machine
from tutor.cli import main
from tutor import stage_clock
from tutor.progress import Progress

# puzzle0 at 256 rows (tests/conftest.py): these tests are of the tutor's flows, not of puzzle0's numbers.
pytestmark = pytest.mark.usefixtures("small_catalog")


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
    rows = {line.split()[0]: line for line in out.splitlines() if line.lstrip().startswith("puzzle")}
    if not this_machine().nvidia_driver:  # whether this machine can run each one, as the TUI says
        assert "ready" in rows["puzzle0"] and "no CUDA" in rows["puzzle1"]
    assert main(["show", "puzzle0"]) == 0
    out = capsys.readouterr().out
    assert "feature scaler" in out.lower() and "bronze" in out.lower()


def test_the_puzzle_page_says_which_clock_each_tier_is_timed_on(in_workspace, capsys):
    """puzzle1's silver is on GPU time, its bronze on a call's time: a learner must see which is which."""
    assert main(["show", "puzzle1"]) == 0
    rows = [line.split() for line in capsys.readouterr().out.splitlines()]
    bronze = next(r for r in rows if r[:1] == ["bronze"])
    silver = next(r for r in rows if r[:1] == ["silver"])
    assert bronze[-2:] == ["call's", "time"] and silver[-2:] == ["GPU", "time"]


def test_watching_a_serving_puzzle_is_refused_before_anything_starts(in_workspace, capsys):
    """A serving puzzle has no quick check: every save would meet the same refusal, so watch gives it once."""
    assert main(["watch", "puzzle18"]) == 2
    panel = " ".join(line.strip("│ ") for line in capsys.readouterr().err.splitlines())  # its lines rejoined
    assert "puzzle18 is a serving puzzle" in panel and "`infprof-tutor grade puzzle18`" in panel, panel
    assert not in_workspace.runs_dir.exists() or not any(in_workspace.runs_dir.iterdir())


def test_unknown_puzzle_is_a_usage_error(in_workspace, capsys):
    assert main(["show", "nope"]) == 2
    assert "Known puzzles" in capsys.readouterr().err


def test_a_bug_of_ours_is_a_panel_and_a_log_not_a_traceback(in_workspace, capsys, monkeypatch, tmp_path):
    monkeypatch.setenv("XDG_STATE_HOME", str(tmp_path / "state"))
    import tutor.cli as cli

    def broken(args):
        raise KeyError("category")

    monkeypatch.setattr(cli, "cmd_list", broken)
    assert main(["list"]) == 3
    err = capsys.readouterr().err
    assert "unexpected KeyError" in err and "Traceback" not in err
    [log] = (tmp_path / "state").rglob("crash.log")
    assert "Traceback" in log.read_text() and "KeyError" in log.read_text()


def test_an_nsight_compute_profile_shows_its_own_kernel_columns():
    # Recorded on the H100 (tests/fixtures/puzzle3_mine_ncu.csv): ncu rows have no category.
    from rich.console import Console

    from tutor.cli_views import metrics_view
    from tutor.profilers import ncu

    console = Console(width=160, record=True)
    console.print(metrics_view(ncu.extract(Path(__file__).parent / "fixtures" / "puzzle3_mine_ncu.csv")))
    text = console.export_text()
    assert "SM %" in text and "regs" in text and "category" not in text.split("Top kernels")[1]
    assert "ncu.duration_us" in text and "µs" in text  # in units, as the TUI shows it, and as cited


def test_list_imports_neither_torch_nor_pandas(in_workspace):
    code = ("import sys; from tutor.cli import main; rc = main(['list']); "
            "bad = [m for m in ('torch', 'pandas', 'numpy', 'textual') if m in sys.modules]; "
            "sys.exit(f'imported {bad}' if bad else rc)")
    done = subprocess.run([sys.executable, "-c", code], cwd=in_workspace.root, capture_output=True, text=True)
    assert done.returncode == 0, done.stderr


def test_hints_one_at_a_time_and_again_all_that_are_out(in_workspace, capsys):
    assert main(["hint", "puzzle0", "--all"]) == 0
    assert "No hint revealed yet" in capsys.readouterr().out
    for expected in ("Hint 1/3", "Hint 2/3", "Hint 3/3", "All 3 hints are out"):
        assert main(["hint", "puzzle0"]) == 0
        assert expected in capsys.readouterr().out
    assert main(["hint", "puzzle0", "--all"]) == 0
    out = capsys.readouterr().out
    assert all(f"Hint {n}/3" in out for n in (1, 2, 3)) and "are out" not in out


def test_every_reset_keeps_its_own_backup_and_says_where(in_workspace, capsys):
    """Two resets in a row lose nothing: each keeps the files it replaced in a folder of its own, printed whole."""
    workload = in_workspace.root / "puzzle0" / "workload.py"
    workload.write_text("first try")
    assert main(["reset", "puzzle0"]) == 0
    first = capsys.readouterr().out
    workload.write_text("second try")
    assert main(["reset", "puzzle0"]) == 0
    second = capsys.readouterr().out
    assert "def forward" in workload.read_text()
    kept = sorted((in_workspace.root / ".infprof" / "backups" / "puzzle0").glob("*/workload.py"))
    assert [k.read_text() for k in kept] == ["first try", "second try"]
    assert str(kept[0]) in first.replace("\n", "") and str(kept[1]) in second.replace("\n", "")
    assert main(["reset", "puzzle0"]) == 0  # nothing changed since: nothing to keep
    assert "unchanged" in capsys.readouterr().out
    assert len(list((in_workspace.root / ".infprof" / "backups" / "puzzle0").glob("*/workload.py"))) == 2


def test_grading_the_untouched_baseline_fails_and_is_recorded(in_workspace, capsys, monkeypatch):
    monkeypatch.setattr(stage_clock, "LONG_S", 0.0)  # a grade of seconds here, accounted for as a long one would be
    assert main(["grade", "puzzle0"]) == 1
    out, err = capsys.readouterr()
    assert "PASS correctness" in out and "FAIL performance" in out and "FAIL diagnosis" in out
    assert "infprof-tutor hint puzzle0" in out
    assert " s in all, most of it in " in err  # after the verdict: where the grade's time went
    [attempt] = Progress(in_workspace.db_path).attempts("puzzle0")
    # Recorded as the verdict read it (how near 1.0 a baseline against itself lands is the CPU's load, not the test's).
    assert attempt["passed"] == 0 and 0 < attempt["speedup_low"] <= attempt["speedup"]
    assert f"you are {attempt['speedup']:.2f}x" in out


def test_a_crashing_workload_is_a_failed_attempt_with_its_output(in_workspace, capsys):
    (in_workspace.root / "puzzle0" / "workload.py").write_text(
        "def prepare(w, d):\n    return w\ndef forward(s, x):\n    print('last words')\n    raise KeyError('oops')\n")
    assert main(["grade", "puzzle0"]) == 1
    err = capsys.readouterr().err
    assert "KeyError" in err and "last words" in err and "Traceback" not in err.split("Last output")[0]
    [attempt] = Progress(in_workspace.db_path).attempts("puzzle0")
    assert attempt["passed"] == 0 and "workload_error" in attempt["verdict_json"]


def test_a_bad_answer_toml_gets_a_panel_with_the_line_at_fault_after_the_verdict(in_workspace, capsys):
    (in_workspace.root / "puzzle0" / "answer.toml").write_text("bottleneck = [oops\n")
    assert main(["grade", "puzzle0"]) == 1
    out = capsys.readouterr().out
    verdict, panel = out.split("answer.toml cannot be read")
    assert "PASS correctness" in verdict and "FAIL diagnosis: answer.toml, line 1, column 15" in verdict
    assert "[[evidence]]" not in verdict  # the format is told once, in the panel
    assert "1 │ bottleneck = [oops" in panel and "│               ^" in panel and "[[evidence]]" in panel
    [attempt] = Progress(in_workspace.db_path).attempts("puzzle0")  # graded all the same
    assert attempt["passed"] == 0


def _ctrl_c_ignored() -> None:
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGINT})


# `infprof-tutor watch` with the small puzzle0 (its folder the first argument) in its catalog, as `small_catalog`
# gives this process, and its threads' stacks written to stderr on SIGUSR1.
WATCH_SMALL_WITH_STACKS = f"""
import faulthandler, signal, sys
from pathlib import Path
sys.path.insert(0, {str(Path(__file__).parent)!r})
from conftest import scan_with_small_puzzle0
from tutor import catalog
faulthandler.register(signal.SIGUSR1, all_threads=True)
catalog._scan = scan_with_small_puzzle0(catalog._scan, catalog.load_puzzle(Path(sys.argv.pop(1))))
from tutor.cli import main
sys.exit(main(sys.argv[1:]))
"""


def test_watch_runs_a_quick_check_now_and_on_every_save_until_ctrl_c(in_workspace, small_puzzle0):
    """A real `infprof-tutor watch puzzle0`: a check at start, one per save (watched from before the first check, so
    a save as soon as it says so is seen), Ctrl-C kills a check in progress."""
    from tutor.catalog import get_puzzle

    folder = in_workspace.root / "puzzle0"
    # Started with Ctrl-C ignored, as a test process or a shell's background job may hand it on: watch says Ctrl-C
    # stops it, and it must.
    proc = subprocess.Popen([sys.executable, "-c", WATCH_SMALL_WITH_STACKS, str(small_puzzle0.folder), "watch",
                             "puzzle0"], cwd=in_workspace.root, text=True, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, env={**os.environ, "COLUMNS": "100"}, preexec_fn=_ctrl_c_ignored)
    err, out = _Lines(proc.stderr), _Lines(proc.stdout)
    try:
        err.wait_for("Watching", count=1)
        out.wait_for("Quick check · correct", count=1)  # read by its own thread: it may lag the other stream's
        assert "Quick check of your files" in err.text and "below every tier" in out.text
        (folder / "workload.py").write_text((get_puzzle("puzzle0").solution_dir / "workload.py").read_text())
        err.wait_for("Watching", count=2)
        out.wait_for("Quick check · correct", count=2)
        # The tier it would reach, or why not: ten rounds beside three other test processes can leave a wide interval.
        assert "after your save of workload.py" in err.text and ("would reach" in out.text or "lower bound" in out.text)
        (folder / "workload.py").write_text("import time\ndef prepare(w, d):\n    return w\n"
                                            "def forward(s, x):\n    time.sleep(3600)\n")
        err.wait_for("your workload: compiling", count=3)  # the third check is stuck in forward()
        proc.send_signal(signal.SIGINT)
        try:
            assert proc.wait(30) == 0
        except subprocess.TimeoutExpired:  # once in a loaded suite: where each thread of it waits, to find why
            proc.send_signal(signal.SIGUSR1)
            err.done.wait(5)
            raise AssertionError("watch did not stop within 30 s of Ctrl-C:\n" + err.text[-6000:]) from None
    finally:
        proc.kill()
    err.done.wait(10)
    assert "Stopped watching." in err.text
    checks = sorted(in_workspace.runs_dir.glob("*-puzzle0-check-*"))
    assert len(checks) == 3
    assert not _processes_running(str(checks[-1] / "request.json"))  # the stuck workload was killed
    assert Progress(in_workspace.db_path).attempts("puzzle0") == []  # nothing recorded


class _Lines:
    """A subprocess stream read on a thread, so a test can wait for a line without blocking on the pipe."""

    def __init__(self, stream) -> None:
        self.lines: list[str] = []
        self.done = threading.Event()
        threading.Thread(target=self._read, args=(stream,), daemon=True).start()

    def _read(self, stream) -> None:
        for line in stream:
            self.lines.append(line)
        self.done.set()

    @property
    def text(self) -> str:
        return "".join(self.lines)

    def wait_for(self, words: str, count: int = 1, timeout_s: float = 120) -> None:
        deadline = time.monotonic() + timeout_s
        while sum(words in line for line in self.lines) < count:
            assert time.monotonic() < deadline and not self.done.is_set(), f"no {words!r} #{count} in:\n{self.text}"
            time.sleep(0.1)


def _processes_running(argument: str) -> list[int]:
    pids = []
    for cmdline in Path("/proc").glob("[0-9]*/cmdline"):
        try:
            if argument.encode() in cmdline.read_bytes():
                pids.append(int(cmdline.parent.name))
        except OSError:
            pass  # gone meanwhile
    return pids


def test_at_80_columns_a_puzzle_is_a_line_and_a_path_or_command_is_printed_whole(in_workspace, monkeypatch):
    """An 80 x 24 terminal: `list` gives each puzzle one line, `study` puts a metric's meaning under its name and a
    kernel's name under the table, and the trace's path and the line that opens it are each whole on a line of
    their own, to paste (nothing here is wider than 80 but those two)."""
    from rich.console import Console

    from tutor import cli
    from tutor.catalog import all_puzzles

    monkeypatch.setattr(cli, "console", Console(width=80, record=True, force_terminal=False))
    assert main(["list"]) == 0
    listing = cli.console.export_text()
    assert all(len(line) <= 80 for line in listing.splitlines())
    assert sum(line.lstrip().startswith("puzzle") for line in listing.splitlines()) == len(all_puzzles())
    assert main(["study", "puzzle4"]) == 0
    study = cli.console.export_text().splitlines()
    trace = next(i for i, line in enumerate(study) if line.startswith("Trace ("))
    path, command = study[trace + 1], study[trace + 3]
    assert path.endswith("baseline_trace.json.gz") and " " not in path and command.endswith(path)
    assert all(len(line) <= 80 for line in study if line not in (path, command))
    assert any("metric (meaning)" in line for line in study) and not any("┃ meaning" in line for line in study)
    assert any(line.strip().startswith("1. ") for line in study)  # the top kernel's name, under the table
