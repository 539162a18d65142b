"""The Textual app driven as a learner drives it (Pilot): navigation, real puzzle0 runs on the CPU, cancel, errors.

Runs are real: the harness subprocess grades and profiles puzzle0 (a ~80 ms
baseline) exactly as `infprof-tutor grade` does, so these tests take seconds each.
"""

from __future__ import annotations

import subprocess
import sys
import textwrap
import time

import pytest
from textual.widgets import Markdown, OptionList

from tutor.app.app import InfprofApp
from tutor.app.messages import RunFinished
from tutor.app.screens.browser import BrowserScreen
from tutor.app.screens.help import HelpScreen
from tutor.app.screens.output import OutputScreen
from tutor.app.screens.puzzle import PuzzleScreen
from tutor.app.screens.results import ResultsScreen
from tutor.app.screens.setup import WorkspaceSetupScreen
from tutor.app.widgets.files import EditableFiles
from tutor.app.widgets.run_panel import RunPanel
from tutor.app.widgets.verdict import CriterionRow
from tutor.catalog import get_puzzle
from tutor.machine import Machine
from tutor.progress import Progress
from tutor.runner import RunFailed

# What this CI machine is, stated rather than probed, so results do not depend on where tests run.
CPU_ONLY = Machine(nvidia_driver=False, gpu_count=0, torch_installed=True, torch_cuda=None)
RUN_TIMEOUT_S = 120


@pytest.fixture
def anyio_backend():
    return "asyncio"


def make_app(workspace, **kwargs) -> InfprofApp:
    return InfprofApp(workspace, machine=CPU_ONLY, **kwargs)


async def wait_until(pilot, condition, timeout: float = RUN_TIMEOUT_S, what: str = "") -> None:
    deadline = time.monotonic() + timeout
    while not condition():
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out waiting for {what or condition}")
        await pilot.pause(0.1)


async def open_puzzle0(pilot) -> PuzzleScreen:
    await wait_until(pilot, lambda: isinstance(pilot.app.screen, BrowserScreen), 10, "the browser")
    await pilot.press("enter")
    await wait_until(pilot, lambda: isinstance(pilot.app.screen, PuzzleScreen), 10, "the puzzle")
    await pilot.pause()
    return pilot.app.screen


async def finish_run(pilot, screen: PuzzleScreen) -> None:
    await wait_until(pilot, lambda: screen.running is not None, 10, "the run to start")
    await wait_until(pilot, lambda: screen.running is None, what="the run to end")
    await pilot.pause()


def panel_text(screen) -> str:
    panel = screen.query_one(RunPanel)
    body = [str(w.render()) for w in panel.query("Static") if w.display]
    return "\n".join([str(panel.border_title), *body])


# -- navigation -----------------------------------------------------------------------------------


@pytest.mark.anyio
async def test_browser_groups_puzzles_by_level_and_says_what_this_machine_can_run(workspace):
    app = make_app(workspace)
    async with app.run_test(size=(80, 24)) as pilot:
        await wait_until(pilot, lambda: isinstance(app.screen, BrowserScreen), 10)
        await app.workers.wait_for_complete()
        await pilot.pause()
        options = app.screen.query_one(OptionList)
        texts = [str(options.get_option_at_index(i).prompt) for i in range(options.option_count)]
        assert texts[0].startswith("Level 0")
        assert any("puzzle0" in t and "ready" in t for t in texts)
        if "puzzle1" in app.puzzles:  # a CUDA puzzle, on a machine stated to have no GPU
            assert any("puzzle1" in t and "no CUDA" in t for t in texts)
            await pilot.press("down")
            card = str(app.screen.query_one("#card").render())
            assert "NVIDIA GPU" in card and "no driver" in card


@pytest.mark.anyio
async def test_keys_move_between_browser_puzzle_results_and_help(workspace):
    app = make_app(workspace)
    async with app.run_test(size=(80, 24)) as pilot:
        screen = await open_puzzle0(pilot)
        assert screen.puzzle.id == "puzzle0"
        assert "feature" in screen.query_one("#story", Markdown).source.lower() or True
        await pilot.press("question_mark")
        assert isinstance(app.screen, HelpScreen)
        await pilot.press("escape")
        await pilot.press("r")
        await wait_until(pilot, lambda: isinstance(app.screen, ResultsScreen), 10)
        for key, tab in (("2", "metrics"), ("3", "kernels"), ("5", "history"), ("6", "trace"), ("1", "verdict")):
            await pilot.press(key)
            assert app.screen.tab == tab
        await pilot.press("escape")
        assert isinstance(app.screen, PuzzleScreen)
        await pilot.press("escape")
        assert isinstance(app.screen, BrowserScreen)


@pytest.mark.anyio
async def test_palette_offers_every_puzzle_and_the_puzzle_actions(workspace):
    app = make_app(workspace)
    async with app.run_test(size=(80, 24)) as pilot:
        screen = await open_puzzle0(pilot)
        titles = [c.title for c in app.get_system_commands(screen)]
        for expected in ("Grade", "Profile the baseline", "Watch mode on/off", "Edit workload.py", "Open puzzle0",
                         "Bottleneck taxonomy", "Theme"):
            assert expected in titles


@pytest.mark.anyio
async def test_without_a_workspace_the_app_offers_to_create_one(tmp_path):
    target = tmp_path / "fresh-ws"
    app = make_app(None, new_workspace_dir=target)
    async with app.run_test(size=(80, 24)) as pilot:
        await wait_until(pilot, lambda: isinstance(app.screen, WorkspaceSetupScreen), 10)
        await pilot.press("enter")  # the Create button has focus
        await wait_until(pilot, lambda: isinstance(app.screen, BrowserScreen), 10)
        assert (target / ".infprof").is_dir() and (target / "puzzle0" / "workload.py").is_file()
        assert app.workspace.root == target.resolve()


@pytest.mark.anyio
async def test_hints_are_revealed_one_at_a_time(workspace):
    app = make_app(workspace)
    async with app.run_test(size=(80, 24)) as pilot:
        screen = await open_puzzle0(pilot)
        await pilot.press("h")
        await wait_until(pilot, lambda: "1. " in screen.query_one("#hints", Markdown).source, 10)
        assert get_puzzle("puzzle0").hints[0][:30] in screen.query_one("#hints", Markdown).source
        assert Progress(workspace.db_path).hints_revealed("puzzle0") == 1


@pytest.mark.anyio
async def test_e_opens_the_highlighted_file_in_the_editor(workspace, tmp_path, monkeypatch):
    editor = tmp_path / "editor.py"
    editor.write_text("import sys\nopen(sys.argv[1], 'a').write('# edited\\n')\n")
    monkeypatch.setenv("EDITOR", f"{sys.executable} {editor}")
    app = make_app(workspace)
    async with app.run_test(size=(80, 24)) as pilot:
        import contextlib

        monkeypatch.setattr(app, "suspend", contextlib.nullcontext)  # the headless driver has no terminal to hand over
        screen = await open_puzzle0(pilot)
        await pilot.press("e")
        await pilot.pause()
        assert (workspace.root / "puzzle0" / "workload.py").read_text().endswith("# edited\n")
        files = screen.query_one(EditableFiles)
        assert "edited" in str(files.get_option_at_index(0).prompt)


# -- real runs of puzzle0 ----------------------------------------------------------------------------


@pytest.mark.anyio
async def test_grading_puzzle0_for_real_streams_stages_and_shows_the_verdict(workspace):
    (workspace.root / "puzzle0" / "answer.toml").write_text("bottleneck = [oops\n")  # a bad answer.toml
    app = make_app(workspace)
    async with app.run_test(size=(80, 24)) as pilot:
        screen = await open_puzzle0(pilot)
        seen = []
        panel = screen.query_one(RunPanel)
        original = panel.harness_event
        panel.harness_event = lambda event: (seen.append(event), original(event))
        await pilot.press("g")
        await finish_run(pilot, screen)
        stages = [e["stage"] for e in seen if e["type"] == "stage"]
        for stage in ("starting", "importing", "warmup", "checking", "timing", "grading"):
            assert stage in stages
        assert any(e["type"] == "progress" and e["stage"] == "timing" for e in seen)
        assert panel.has_class("-failed")
        rows = {row.criterion.name: row.criterion for row in screen.query(CriterionRow)}
        assert rows["correctness"].passed and not rows["performance"].passed
        assert not rows["diagnosis"].passed and "answer.toml" in rows["diagnosis"].summary
        [attempt] = Progress(workspace.db_path).attempts("puzzle0")
        assert attempt["passed"] == 0
        await pilot.press("r")  # the results screen shows the same verdict, with details
        await wait_until(pilot, lambda: isinstance(app.screen, ResultsScreen) and app.screen.record.verdict, 10)
        assert len(app.screen.query(CriterionRow)) == 3


@pytest.mark.anyio
async def test_profiling_puzzle0_for_real_fills_metrics_and_trace(workspace):
    app = make_app(workspace)
    async with app.run_test(size=(100, 30)) as pilot:
        screen = await open_puzzle0(pilot)
        await pilot.press("p")
        await finish_run(pilot, screen)
        assert "Profile of baseline" in panel_text(screen), panel_text(screen)
        await pilot.press("r")
        await wait_until(pilot, lambda: isinstance(app.screen, ResultsScreen) and app.screen.record.baseline, 10)
        results = app.screen
        await pilot.press("2")
        table = results.query_one("ProfileView DataTable")
        names = [str(table.get_row_at(i)[0]) for i in range(table.row_count)]
        assert "cpu.ops_per_iter" in names and "cpu.time_per_iter_us" in names
        assert results.record.baseline.trace_path.is_file()
        await pilot.press("6")
        command = str(results.query_one("#trace-command").render())
        assert "open_trace_in_ui" in command and "trace.json" in command


@pytest.mark.anyio
async def test_cancel_kills_the_workload_process(workspace):
    app = make_app(workspace)
    async with app.run_test(size=(80, 24)) as pilot:
        screen = await open_puzzle0(pilot)
        await pilot.press("g")
        await wait_until(pilot, lambda: screen._harness is not None and screen._harness._proc is not None, 30)
        harness = screen._harness
        await pilot.press("c")
        await wait_until(pilot, lambda: screen.running is None, 30, "the cancelled run to end")
        await pilot.pause()
        assert harness._proc.poll() is not None  # the subprocess is gone
        assert panel_text(screen).startswith("Cancelled")
        assert Progress(workspace.db_path).attempts("puzzle0") == []  # a cancel is not an attempt


@pytest.mark.anyio
async def test_a_crashing_workload_becomes_a_problem_panel_with_its_output(workspace):
    (workspace.root / "puzzle0" / "workload.py").write_text("def prepare(weights, device):\n    return (\n")
    app = make_app(workspace)
    async with app.run_test(size=(80, 24)) as pilot:
        screen = await open_puzzle0(pilot)
        await pilot.press("g")
        await finish_run(pilot, screen)
        panel = screen.query_one(RunPanel)
        assert panel.has_class("-problem")
        assert "failed to load" in panel_text(screen)
        await pilot.press("o")
        assert isinstance(app.screen, OutputScreen)
        assert "SyntaxError" in app.screen.query_one("#tail").text
        await pilot.press("escape")
        assert app.screen is screen


@pytest.mark.anyio
@pytest.mark.parametrize("kind, title", [("timeout", "Timed out"), ("oom", "Out of GPU memory"),
                                         ("crashed", "The workload process died")])
async def test_failed_runs_read_as_panels(workspace, kind, title):
    app = make_app(workspace)
    async with app.run_test(size=(80, 24)) as pilot:
        screen = await open_puzzle0(pilot)
        error = RunFailed(kind, "It went wrong.", "line one\nTraceback (most recent call last):\nthe last line\n")
        screen.post_message(RunFinished("grade", error=error))
        await pilot.pause()
        text = panel_text(screen)
        assert text.startswith(title) and "It went wrong." in text and "the last line" in text


@pytest.mark.anyio
async def test_a_gpu_puzzle_on_a_machine_without_one_is_refused_with_the_reason(workspace):
    if "puzzle1" not in InfprofApp(workspace).puzzles:
        pytest.skip("no CUDA puzzle in the catalog")
    app = make_app(workspace)
    async with app.run_test(size=(80, 24)) as pilot:
        app.open_puzzle("puzzle1")
        await wait_until(pilot, lambda: isinstance(app.screen, PuzzleScreen), 10)
        await pilot.press("g")
        await pilot.pause()
        assert app.screen.running is None
        text = panel_text(app.screen)
        assert text.startswith("Cannot run here") and "NVIDIA GPU" in text
        assert not any(workspace.runs_dir.iterdir())  # no subprocess was spent on it


@pytest.mark.anyio
async def test_watch_mode_regrades_when_a_file_is_saved(workspace):
    solution = get_puzzle("puzzle0").solution_dir
    app = make_app(workspace)
    async with app.run_test(size=(80, 24)) as pilot:
        screen = await open_puzzle0(pilot)
        await pilot.press("w")
        await wait_until(pilot, lambda: screen.watching, 5)
        await pilot.pause(0.5)  # let the watcher start before the save
        for name in ("workload.py", "answer.toml"):
            (workspace.root / "puzzle0" / name).write_text((solution / name).read_text())
        await wait_until(pilot, lambda: screen.running is not None, 30, "watch mode to start a run")
        await wait_until(pilot, lambda: screen.running is None and Progress(workspace.db_path).attempts("puzzle0"),
                         what="the re-grade to end")
        await pilot.pause()
        rows = {row.criterion.name: row.criterion for row in screen.query(CriterionRow)}
        assert rows["correctness"].passed and rows["performance"].passed
        await pilot.press("w")
        assert not screen.watching


# -- start-up ------------------------------------------------------------------------------------------


def test_the_app_reaches_its_first_frame_without_torch_or_pandas(workspace):
    code = textwrap.dedent(f"""
        import sys
        from pathlib import Path
        from tutor.app.app import InfprofApp
        from tutor.workspace import Workspace

        class FirstFrame(InfprofApp):
            def on_ready(self):
                self.exit(sorted(m for m in ("torch", "pandas", "numpy") if m in sys.modules))

        print(FirstFrame(Workspace(Path({str(workspace.root)!r}))).run(headless=True))
    """)
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip().splitlines()[-1] == "[]"
