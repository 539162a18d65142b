"""The Textual app driven as a learner drives it (Pilot): navigation, real puzzle0 runs on the CPU, cancel, errors.

Runs are real: the harness subprocess grades and profiles puzzle0 (a ~80 ms
baseline) exactly as `infprof-tutor grade` does, so these tests take seconds each.
"""

from __future__ import annotations

import contextlib
import gzip
import json
import os
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest
from textual.command import CommandList, CommandPalette
from textual.widgets import Markdown, OptionList

from tutor import stage_clock
from tutor.app.app import InfprofApp
from tutor.app.commands import puzzle_commands
from tutor.app.messages import FilesSaved, RunFinished
from tutor.app.screens.browser import BrowserScreen
from tutor.app.screens.help import HelpScreen
from tutor.app.screens.output import OutputScreen
from tutor.app.screens.puzzle import PuzzleScreen
from tutor.app.screens.results import ResultsScreen
from tutor.app.screens.setup import WorkspaceSetupScreen
from tutor.app.widgets.files import EditableFiles
from tutor.app.widgets.kernels import KernelTable
from tutor.app.widgets.run_panel import RunPanel
from tutor.app.widgets.verdict import CriterionRow
from tutor.catalog import get_puzzle
from tutor.machine import Machine, readiness
from tutor.metrics import ProfileMetrics
from tutor.profilers import ncu, nsys_run
from tutor.profilers.openers import shell_path
from tutor.profilers.registry import PERFETTO_SCRIPT, PROFILERS
from tutor.progress import Progress
from tutor.runner import RunFailed
from conftest import recording, started_keeper

# What this CI machine is, stated rather than probed, so results do not depend on where tests run.
CPU_ONLY = Machine(nvidia_driver=False, gpu_count=0, torch_installed=True, torch_cuda=None)
ONE_H100 = Machine(nvidia_driver=True, gpu_count=1, compute_capabilities=(9.0,), torch_installed=True, torch_cuda="12.8")
# How long a test waits for a run to start or end: a run may first wait 90 s for a warm harness still warming
# (tutor.warm.READY_WAIT_S) and then start cold, which on an over-full 2-core machine took past 120 s once.
RUN_TIMEOUT_S = 300
FIXTURES = Path(__file__).parent / "fixtures"

# puzzle0 at 256 rows (tests/conftest.py): these tests are of the app, not of puzzle0's numbers; runs cold: the app
# starts its own warm harness.
pytestmark = [pytest.mark.anyio, pytest.mark.usefixtures("small_catalog")]


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


def harness_started(screen) -> bool:
    return screen._harness is not None and screen._harness._proc is not None


async def open_puzzle0(pilot) -> PuzzleScreen:
    await wait_until(pilot, lambda: isinstance(pilot.app.screen, BrowserScreen), 10, "the browser")
    await pilot.press("enter")
    await wait_until(pilot, lambda: isinstance(pilot.app.screen, PuzzleScreen), 10, "the puzzle")
    await pilot.pause()
    return pilot.app.screen


@contextlib.asynccontextmanager
async def puzzle_open(workspace, puzzle_id: str = "puzzle0", size=(80, 24), machine: Machine = CPU_ONLY):
    """The app on `workspace` with a puzzle open: (pilot, its screen); puzzle0 is opened from the browser."""
    app = InfprofApp(workspace, machine=machine)
    async with app.run_test(size=size) as pilot:
        if puzzle_id == "puzzle0":
            yield pilot, await open_puzzle0(pilot)
        else:
            await wait_until(pilot, lambda: isinstance(app.screen, BrowserScreen), 10, "the browser")
            app.open_puzzle(puzzle_id)
            await wait_until(pilot, lambda: isinstance(app.screen, PuzzleScreen), 10, "the puzzle")
            yield pilot, app.screen


async def finish_run(pilot, screen: PuzzleScreen) -> None:
    """Until every run started has ended. Counted, not watched: a run that fails at once (a syntax error, forked from
    a warm harness) can start and end between two looks at `running`."""
    await wait_until(pilot, lambda: screen.runs_started > 0, 10, "the run to start")
    await wait_until(pilot, lambda: screen.running is None and screen.runs_finished == screen.runs_started,
                     what="the run to end")
    await pilot.pause()


async def results_loaded(pilot, loaded) -> ResultsScreen:
    """The results screen just opened, once its record is read and `loaded(record)` holds."""
    await wait_until(pilot, lambda: isinstance(pilot.app.screen, ResultsScreen) and loaded(pilot.app.screen.record),
                     10, "the results")
    await pilot.pause()
    return pilot.app.screen


async def wait_for_screen(pilot, screen_type):
    await wait_until(pilot, lambda: isinstance(pilot.app.screen, screen_type), 10, screen_type.__name__)
    return pilot.app.screen


def needs_puzzle(workspace, puzzle_id: str) -> None:
    if puzzle_id not in InfprofApp(workspace).puzzles:
        pytest.skip(f"no {puzzle_id} in the catalog")


def panel_text(screen) -> str:
    panel = screen.query_one(RunPanel)
    body = [str(w.render()) for w in panel.query("Static") if w.display]
    return "\n".join([str(panel.border_title), *body])


# -- navigation -----------------------------------------------------------------------------------


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


async def test_keys_move_between_browser_puzzle_results_and_help(workspace):
    async with puzzle_open(workspace) as (pilot, screen):
        app = pilot.app
        assert screen.puzzle.id == "puzzle0"
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


async def test_puzzle_view_shows_story_goal_files_grading_and_tiers(workspace):
    puzzle = get_puzzle("puzzle0")
    async with puzzle_open(workspace) as (pilot, screen):
        story = screen.query_one("#story", Markdown).source
        assert puzzle.story.strip().splitlines()[-1] in story and "goal" in story.lower()
        grading = screen.query_one("#grading", Markdown).source
        for tier in puzzle.tiers:
            assert f"| {tier.name} | ≥ {tier.min_speedup:g}× |" in grading
        assert "Correctness" in grading and "Diagnosis" in grading
        files = screen.query_one(EditableFiles)
        assert [str(files.get_option_at_index(i).prompt).split()[0] for i in range(files.option_count)] \
            == list(puzzle.editable)
        assert str(files.border_subtitle).endswith("/puzzle0")
        assert files.selected_path == workspace.root / "puzzle0" / puzzle.editable[0]


async def test_palette_offers_every_puzzle_and_the_puzzle_actions(workspace):
    async with puzzle_open(workspace) as (pilot, screen):
        titles = [c.title for c in pilot.app.get_system_commands(screen)]
        for expected in ("Grade", "Quick check", "Profile the baseline", "Profile mine", "Watch mode on/off",
                         "Edit workload.py",
                         "Open puzzle0", "Bottleneck taxonomy", "Theme"):
            assert expected in titles
        assert not any(" with " in t for t in titles)  # puzzle0 lists the PyTorch profiler only


async def test_palette_profiles_with_each_profiler_the_puzzle_lists_and_says_which_are_missing(
        workspace, tmp_path, monkeypatch):
    """On a GPU machine (stated) without Nsight tools: the commands say so, and choosing one explains it."""
    puzzle = next((p for p in InfprofApp(workspace).puzzles.values()
                   if len(p.profilers) > 1 and readiness(p, ONE_H100).ok), None)
    if puzzle is None:
        pytest.skip("no puzzle with a second profiler that this (stated) machine could run")
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    monkeypatch.setenv("PATH", str(bin_dir))  # neither ncu nor nsys on PATH...
    monkeypatch.setattr(ncu, "SEARCH", ())  # ...nor where NVIDIA's installers put them
    monkeypatch.setattr(nsys_run, "SEARCH", ())
    other = puzzle.profilers[1]
    async with puzzle_open(workspace, puzzle.id, machine=ONE_H100) as (pilot, screen):
        await pilot.press("ctrl+p")
        await pilot.press(*f"baseline with {other}")
        palette = await wait_for_screen(pilot, CommandPalette)
        commands = palette.query_one(CommandList)
        await wait_until(pilot, lambda: commands.option_count > 0, 10, "the palette's matches")
        first = str(commands.get_option_at_index(0).prompt)
        assert first.startswith(f"Profile the baseline with {other}\nnot available here: ")
        assert f"({other}) is not installed" in first
        await pilot.press("enter")
        await wait_until(pilot, lambda: pilot.app.screen is screen, 5, "the palette to close")
        await pilot.pause()
        text = panel_text(screen)
        assert text.startswith("Cannot run here") and f"({other}) is not installed" in text
        assert "Install Nsight" in text
        assert screen.running is None and not any(workspace.runs_dir.iterdir())  # refused before any subprocess

        (bin_dir / other).write_text("#!/bin/sh\n")
        (bin_dir / other).chmod(0o755)
        helps = {c.title: c.help for c in puzzle_commands(screen)}
        assert helps[f"Profile mine with {other}"] == PROFILERS[other].gives
        for profiler in ("ncu", "nsys", "torch"):
            if profiler not in puzzle.profilers:
                assert not any(t.endswith(f"with {profiler}") for t in helps)


async def test_without_a_workspace_the_app_offers_to_create_one(tmp_path):
    target = tmp_path / "fresh-ws"
    app = make_app(None, new_workspace_dir=target)
    async with app.run_test(size=(80, 24)) as pilot:
        await wait_until(pilot, lambda: isinstance(app.screen, WorkspaceSetupScreen), 10)
        await pilot.press("enter")  # the Create button has focus
        await wait_until(pilot, lambda: isinstance(app.screen, BrowserScreen), 10)
        assert (target / ".infprof").is_dir() and (target / "puzzle0" / "workload.py").is_file()
        assert app.workspace.root == target.resolve()


async def test_hints_are_revealed_one_at_a_time(workspace):
    async with puzzle_open(workspace) as (pilot, screen):
        await pilot.press("h")
        await wait_until(pilot, lambda: "1. " in screen.query_one("#hints", Markdown).source, 10)
        assert get_puzzle("puzzle0").hints[0][:30] in screen.query_one("#hints", Markdown).source
        assert Progress(workspace.db_path).hints_revealed("puzzle0") == 1


async def test_e_opens_the_highlighted_file_in_the_editor(workspace, tmp_path, monkeypatch):
    editor = tmp_path / "editor.py"
    editor.write_text("import sys\nopen(sys.argv[1], 'a').write('# edited\\n')\n")
    monkeypatch.setenv("EDITOR", f"{sys.executable} {editor}")
    async with puzzle_open(workspace) as (pilot, screen):
        # The headless driver has no terminal to hand over to the editor.
        monkeypatch.setattr(pilot.app, "suspend", contextlib.nullcontext)
        await pilot.press("e")
        await pilot.pause()
        assert (workspace.root / "puzzle0" / "workload.py").read_text().endswith("# edited\n")
        files = screen.query_one(EditableFiles)
        assert "edited" in str(files.get_option_at_index(0).prompt)


# -- real runs of puzzle0 ----------------------------------------------------------------------------


async def test_grading_puzzle0_for_real_streams_stages_and_shows_the_verdict(workspace, monkeypatch):
    monkeypatch.setattr(stage_clock, "LONG_S", 0.0)  # a grade of seconds here, accounted for as a long one would be
    async with puzzle_open(workspace) as (pilot, screen):
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
        account = panel.query_one("#run-account")
        assert account.display and " s in all, most of it in " in str(account.render())  # where its time went
        [attempt] = Progress(workspace.db_path).attempts("puzzle0")
        assert attempt["passed"] == 0
        await pilot.press("r")  # the results screen shows the same verdict, with details
        results = await results_loaded(pilot, lambda record: record.verdict)
        assert len(results.query(CriterionRow)) == 3


async def test_profiling_puzzle0_for_real_fills_metrics_and_trace(workspace):
    async with puzzle_open(workspace, size=(100, 30)) as (pilot, screen):
        await pilot.press("p")
        await finish_run(pilot, screen)
        assert "Profile of baseline" in panel_text(screen), panel_text(screen)
        await pilot.press("r")
        results = await results_loaded(pilot, lambda record: record.profile("baseline"))
        await pilot.press("2")
        table = results.query_one("ProfileView DataTable")
        names = [str(table.get_row_at(i)[0]) for i in range(table.row_count)]
        assert "cpu.ops_per_iter" in names and "cpu.time_per_iter_us" in names
        assert results.record.profile("baseline", "torch").trace_path.is_file()
        await pilot.press("6")
        command = str(results.query_one("#trace-command").render())
        assert "open_trace_in_ui" in command and "trace.json" in command


async def test_a_result_that_lands_on_a_closed_screen_is_dropped(workspace):
    """A screen's thread worker (its standing, its results, the doctor's report) may finish after the screen closed:
    a learner who leaves or quits at that moment must see no traceback (a suite run once did: NoMatches on
    #standing as the app quit). While the screen is open, the result is shown."""
    import asyncio

    from tutor.app.threads import show_on_screen
    from tutor.progress import Progress

    async with puzzle_open(workspace) as (pilot, screen):
        status, shown = Progress(workspace.db_path).status("puzzle0"), []
        await asyncio.to_thread(show_on_screen, screen, shown.append, "open")
        assert shown == ["open"]
        await pilot.press("escape")  # back to the puzzle list: the puzzle's screen is closed
        await wait_until(pilot, lambda: not isinstance(pilot.app.screen, PuzzleScreen), 10, "the puzzle list")
        assert not screen.is_attached
        await asyncio.to_thread(show_on_screen, screen, screen._show_standing, status, 0, None)
        await asyncio.to_thread(show_on_screen, screen, shown.append, "closed")
        assert shown == ["open"]


async def test_the_app_warms_a_harness_it_owns_and_its_runs_fork_from_it(workspace, monkeypatch):
    import tempfile

    from tutor.warm import WarmHarness
    monkeypatch.setenv("INFPROF_RUNTIME_DIR", tempfile.mkdtemp(prefix="ipa"))
    monkeypatch.setenv("INFPROF_WARM", "1")
    harness = WarmHarness.for_env()
    try:
        async with puzzle_open(workspace) as (pilot, screen):
            standing = str(screen.query_one("#standing").render())
            # Warming, unless a loaded machine took longer to open the puzzle than the harness to import torch.
            assert "harness warming…" in standing or pilot.app.harness == "ready", standing
            await wait_until(pilot, lambda: pilot.app.harness == "ready", RUN_TIMEOUT_S, "the warm harness")
            await pilot.pause()
            assert "● harness warm" in str(screen.query_one("#standing").render())
            assert harness.ask("status")["owners"] == [os.getpid()]
            # A run forked warm may start and end between two polls of a loaded machine (its end clears
            # screen._harness): the harness is caught as the screen registers it, not polled for.
            registered, register = [], screen._register
            monkeypatch.setattr(screen, "_register", lambda run: (registered.append(run), register(run)))
            await pilot.press("g")
            await wait_until(pilot, lambda: screen.runs_finished == 1, what="the run to end")
            [run] = registered
            assert run.warm, panel_text(screen)
            assert Progress(workspace.db_path).attempts("puzzle0")  # graded and recorded, as a cold run is
    finally:
        harness.stop()


async def test_review_asks_before_opening_early_then_shows_each_solution_beside_yours(workspace):
    from textual.widgets import TabPane

    from tutor.app.screens.review import OpenEarly, ReviewScreen
    async with puzzle_open(workspace) as (pilot, screen):
        await pilot.press("v")
        await wait_for_screen(pilot, OpenEarly)
        await pilot.press("n")  # not yet: nothing opened, nothing recorded
        await wait_until(pilot, lambda: pilot.app.screen is screen, 10, "the puzzle again")
        assert Progress(workspace.db_path).review_opened("puzzle0") == ""
        await pilot.press("v")
        await wait_for_screen(pilot, OpenEarly)
        await pilot.press("y")
        review = await wait_for_screen(pilot, ReviewScreen)
        tabs = [pane.id for pane in review.query(TabPane)]
        assert tabs == ["review-solution", "review-numpy_vectorised", "review-compiled"]
        assert review.sub_title == "opened before solving (recorded)"
        assert Progress(workspace.db_path).review_opened("puzzle0") == "early"


async def test_study_mode_shows_the_recording_in_results_then_checks_the_diagnosis(workspace):
    from tutor.reference import install_reference
    from tutor.study import read_recording
    puzzle = get_puzzle("puzzle1")
    async with puzzle_open(workspace, "puzzle1") as (pilot, screen):
        await pilot.press("s")
        await pilot.press("r")
        results = await results_loaded(pilot, lambda record: record.profile("baseline", "torch"))
        assert results.shown_profile.recorded
        assert "a recording (study mode), not your run" in str(results.query_one(".profile-head").render())
        results.profiler = "ncu"  # ncu's recording is its raw page as CSV: no report for ncu-ui
        await pilot.pause()
        assert str(results.query_one("#trace-command").render()).startswith("column -s, -t < ")
        await pilot.press("escape")
        await wait_until(pilot, lambda: pilot.app.screen is screen, 10, "the puzzle again")
        install_reference(workspace, puzzle, read_recording(puzzle, "torch")[0].values,
                          without={"kernel_evidence", "autotune"})
        await pilot.press("s")
        await wait_until(pilot, lambda: Progress(workspace.db_path).status("puzzle1").status == "diagnosed", 10,
                         "the diagnosis")


async def test_m_shows_what_this_machine_has_as_doctor_says_it(workspace):
    async with make_app(workspace).run_test(size=(100, 40)) as pilot:
        await wait_until(pilot, lambda: isinstance(pilot.app.screen, BrowserScreen), 10, "the browser")
        await pilot.press("m")
        await wait_until(pilot, lambda: pilot.app.screen.query(Markdown), 20, "the report")
        text = pilot.app.screen.query_one(Markdown).source
        assert "## This machine" in text and "**puzzle0**: ready" in text
        assert "`infprof-tutor study puzzle1`" in text  # no GPU here: study mode, and nothing to fix
        assert "Every puzzle this machine can run is ready." in text
        await pilot.press("escape")
        assert isinstance(pilot.app.screen, BrowserScreen)


async def test_the_apps_dialog_shows_the_kept_reports_and_a_commands_problem(workspace):
    from textual.widgets import Input, Static

    from tutor.app.screens.diagnose import DiagnoseScreen

    report = {"findings": [{"bottleneck": "launch_overhead", "share": 0.8, "at_stake": "4 ms a call (80%)",
                            "evidence": [{"metric": "kernels.per_iter", "value": 900.0, "why": "many"}],
                            "where": "the GPU row", "refines": "", "memory": False}], "unclear": []}
    Progress(workspace.db_path).record_workload_diagnosis("python serve.py", report, workspace.root)
    async with make_app(workspace).run_test(size=(80, 24)) as pilot:
        await wait_until(pilot, lambda: isinstance(pilot.app.screen, BrowserScreen), 10, "the browser")
        await pilot.press("d")
        await wait_until(pilot, lambda: isinstance(pilot.app.screen, DiagnoseScreen), 10, "the dialog")

        def shown() -> str:
            return str(pilot.app.screen.query_one("#reports", Static).render())

        await wait_until(pilot, lambda: "launch_overhead" in shown(), 10, "the kept report")
        assert "python serve.py" in shown() and "kernels.per_iter = 900" in shown()
        pilot.app.screen.query_one("#command", Input).value = "make serve"
        await pilot.press("enter")
        await wait_until(pilot, lambda: "diagnose runs Python commands" in shown(), 10, "the problem")


async def test_cancel_kills_the_workload_process(workspace):
    # A workload that never returns: the cancel, not the grade's own end, must be what stops the run (a grade of
    # the small puzzle0 forked warm could end before the key press reached the screen).
    (workspace.root / "puzzle0" / "workload.py").write_text("import time\ndef prepare(weights, device):\n"
                                                             "    return weights\ndef forward(state, x):\n"
                                                             "    time.sleep(3600)\n")
    async with puzzle_open(workspace) as (pilot, screen):
        await pilot.press("g")
        await wait_until(pilot, lambda: harness_started(screen), RUN_TIMEOUT_S)
        harness = screen._harness
        await pilot.press("c")
        await wait_until(pilot, lambda: screen.running is None, RUN_TIMEOUT_S, "the cancelled run to end")
        await pilot.pause()
        assert harness._proc.poll() is not None  # the subprocess is gone
        assert panel_text(screen).startswith("Cancelled")
        assert Progress(workspace.db_path).attempts("puzzle0") == []  # a cancel is not an attempt


async def test_a_crashing_workload_becomes_a_problem_panel_with_its_output(workspace):
    (workspace.root / "puzzle0" / "workload.py").write_text("def prepare(weights, device):\n    return (\n")
    async with puzzle_open(workspace) as (pilot, screen):
        await pilot.press("g")
        await finish_run(pilot, screen)
        panel = screen.query_one(RunPanel)
        assert panel.has_class("-problem")
        assert "failed to load" in panel_text(screen)
        await pilot.press("o")
        assert isinstance(pilot.app.screen, OutputScreen)
        assert "SyntaxError" in pilot.app.screen.query_one("#tail").text
        await pilot.press("escape")
        assert pilot.app.screen is screen


@pytest.mark.parametrize("kind, title", [("timeout", "Timed out"), ("oom", "Out of GPU memory"),
                                         ("crashed", "The workload process died")])
async def test_failed_runs_read_as_panels(workspace, kind, title):
    async with puzzle_open(workspace) as (pilot, screen):
        error = RunFailed(kind, "It went wrong.", "line one\nTraceback (most recent call last):\nthe last line\n")
        screen.post_message(RunFinished("grade", error=error))
        await pilot.pause()
        text = panel_text(screen)
        assert text.startswith(title) and "It went wrong." in text and "the last line" in text


async def test_a_gpu_puzzle_on_a_machine_without_one_offers_study_and_says_why_it_cannot_run(workspace):
    """Without a GPU the footer greys grade, profile and watch and offers study; the panel says why."""
    needs_puzzle(workspace, "puzzle1")
    async with puzzle_open(workspace, "puzzle1") as (pilot, screen):
        await wait_until(pilot, lambda: pilot.app.machine is not None, 10, "the machine to be read")
        await pilot.pause()
        assert screen.check_action("run", ("grade",)) is None and screen.check_action("toggle_watch", ()) is None
        assert screen.check_action("study", ()) is True
        await pilot.press("g")
        await pilot.pause()
        assert screen.running is None
        text = panel_text(screen)
        assert "Cannot run here" in text and "NVIDIA GPU" in text and "s studies the baseline" in text
        assert not any(workspace.runs_dir.iterdir())  # no subprocess was spent on it


def check_requests(ws) -> list[dict]:
    """The harness requests of the quick checks started so far (a request is written whole), oldest first."""
    return [json.loads((d / "request.json").read_text()) for d in sorted(ws.runs_dir.glob("*-puzzle0-check-*"))
            if (d / "request.json").exists()]


async def test_watch_mode_runs_a_quick_check_on_every_save_and_records_nothing(workspace):
    solution = get_puzzle("puzzle0").solution_dir
    async with puzzle_open(workspace, size=(100, 30)) as (pilot, screen):
        await pilot.press("w")
        await wait_until(pilot, lambda: screen.watching, 5)
        assert "every save re-checks" in str(screen.query_one("#standing").render())
        await wait_until(pilot, lambda: screen.watcher_running, 30, "the watcher")  # saves seen from here on
        (workspace.root / "puzzle0" / "workload.py").write_text((solution / "workload.py").read_text())
        await wait_until(pilot, lambda: screen.running is not None, RUN_TIMEOUT_S, "watch mode to start a run")
        assert screen.running.key == "check" and "after your save of workload.py" in panel_text(screen)
        await finish_run(pilot, screen)
        text = panel_text(screen)
        assert text.startswith("Quick check · correct ·") and "x vs baseline" in text, text
        # The tier it would reach, or why not: ten rounds beside three other test processes can leave a wide interval.
        assert "✓ correct: Output matches baseline" in text and ("would reach" in text or "lower bound" in text), text
        assert "not a grade: nothing is recorded. g grades for real" in text
        assert Progress(workspace.db_path).attempts("puzzle0") == []  # a check is not an attempt
        [request] = check_requests(workspace)
        assert (request["mode"], request["time"], request["timing"]["rounds"]) == ("check", ["mine", "baseline"], 10)
        assert not list(workspace.runs_dir.glob("*/memory"))  # no memory run either

        # A save of a broken answer.toml: checked too, and the line at fault shown.
        (workspace.root / "puzzle0" / "answer.toml").write_text('bottleneck = "cpu_overhead"\nvalue = [1,\n')
        await wait_until(pilot, lambda: len(check_requests(workspace)) == 2, RUN_TIMEOUT_S, "the second check")
        await finish_run(pilot, screen)
        text = panel_text(screen)
        assert "✗ answer.toml, line 2: not valid TOML" in text and "bracket or quote left open" in text
        assert "would fail the diagnosis" in text and "2 │ value = [1," in text
        assert Progress(workspace.db_path).attempts("puzzle0") == []
        await pilot.press("w")
        assert not screen.watching


async def test_watch_mode_on_a_serving_puzzle_says_there_is_nothing_to_watch(workspace):
    async with puzzle_open(workspace, "puzzle18") as (pilot, screen):
        screen._runs_here = lambda: True  # as on a GPU machine: this CPU one greys watch mode out
        await pilot.press("w")
        await pilot.pause()
        assert not screen.watching and screen.running is None
        assert any("serving puzzle" in n.message and "g grades it" in n.message for n in pilot.app._notifications)


async def test_turning_watch_mode_off_ends_its_ruler_keeper(workspace, monkeypatch):
    """Its kept ruler holds a process, on a GPU the GPU open, that no check would ask again."""
    keeper = started_keeper(workspace, "puzzle0", monkeypatch)  # the one watching this puzzle here would start
    monkeypatch.setenv("INFPROF_WARM", "0")  # the app then warms no harness of its own: not what this is about
    try:
        async with puzzle_open(workspace) as (pilot, screen):
            await pilot.press("w")
            await wait_until(pilot, lambda: screen.watching, 5)
            assert keeper.state() == "ready"
            await pilot.press("w")
            await wait_until(pilot, lambda: keeper.state() == "off", 10, "the keeper to end")
    finally:
        keeper.stop()


async def test_a_save_during_a_quick_check_restarts_it(workspace):
    workload = workspace.root / "puzzle0" / "workload.py"
    starter = workload.read_text()
    # A check still preparing when the save comes: a whole check can end between two looks of a loaded test.
    workload.write_text(starter + "\nimport time\n_prepare = prepare\n\n\n"
                        "def prepare(w, d):\n    time.sleep(120)\n    return _prepare(w, d)\n")
    async with puzzle_open(workspace) as (pilot, screen):
        await pilot.press("w")
        await wait_until(pilot, lambda: screen.watcher_running, 30, "the watcher")
        screen.action_run("check")
        # A check that ends before its harness is seen (an error) fails here, with what the panel says.
        await wait_until(pilot, lambda: harness_started(screen) or screen.running is None, RUN_TIMEOUT_S)
        assert harness_started(screen), panel_text(screen)
        first = screen._harness
        workload.write_text(starter)  # the save: the watcher sees it
        await wait_until(pilot, lambda: screen._harness not in (None, first), RUN_TIMEOUT_S, "the check to restart")
        assert first._proc.poll() is not None  # the stale check's process is gone
        await finish_run(pilot, screen)
        assert panel_text(screen).startswith("Quick check · correct")
        assert len(check_requests(workspace)) == 2 and Progress(workspace.db_path).attempts("puzzle0") == []


async def test_a_save_during_a_grade_lets_it_finish_then_checks(workspace):
    async with puzzle_open(workspace) as (pilot, screen):
        await pilot.press("w")
        await wait_until(pilot, lambda: screen.watching, 5)
        await pilot.press("g")
        # Saved once the grade's process runs (or, on a loaded machine, once it ended: a check then starts at once).
        await wait_until(pilot, lambda: screen._harness is not None or screen.running is None, RUN_TIMEOUT_S)
        screen.post_message(FilesSaved([workspace.root / "puzzle0" / "workload.py"]))
        await wait_until(pilot, lambda: screen.running is not None and screen.running.key == "check", what="the check")
        assert len(Progress(workspace.db_path).attempts("puzzle0")) == 1  # the grade ran to its end
        await finish_run(pilot, screen)
        assert panel_text(screen).startswith("Quick check")


# -- answer.toml that cannot be read ----------------------------------------------------------------


async def test_a_bad_answer_toml_is_a_problem_panel_with_the_line_at_fault(workspace):
    (workspace.root / "puzzle0" / "answer.toml").write_text("bottleneck = [oops\n")
    async with puzzle_open(workspace, size=(100, 30)) as (pilot, screen):
        await pilot.press("g")
        await finish_run(pilot, screen)
        panel = screen.query_one(RunPanel)
        assert panel.has_class("-problem")
        text = panel_text(screen)
        assert text.startswith("answer.toml cannot be read · Not solved yet"), text
        assert "answer.toml, line 1, column 15: not valid TOML" in text
        assert "puzzle0/answer.toml" in text
        assert "  1 │ bottleneck = [oops\n    │               ^" in text  # the caret under column 15
        assert '[[evidence]]' in text and "metric =" in text  # how the file is written
        assert "The rest of the grade (recorded): ✓ correctness · ✗ performance" in text
        assert panel.border_subtitle == "r: full results"
        [attempt] = Progress(workspace.db_path).attempts("puzzle0")  # still a graded attempt
        assert attempt["passed"] == 0
        assert not screen.check_action("output", ())  # no output tail to show: the file is the problem
        await pilot.press("r")
        results = await results_loaded(pilot, lambda record: record.verdict)
        rows = {row.criterion.name: row.criterion for row in results.query(CriterionRow)}
        assert not rows["diagnosis"].passed and "line 1, column 15" in rows["diagnosis"].summary


async def test_an_answer_toml_with_a_wrong_type_names_the_line_and_what_is_wrong(workspace):
    from tutor.app.runs import Graded
    from tutor.grading.answer import answer_problem
    from tutor.grading.verdict import Criterion, Verdict

    path = workspace.root / "puzzle0" / "answer.toml"
    path.write_text('bottleneck = "cpu_overhead"\n\n[[evidence]]\nmetric = "cpu.ops_per_iter"\nvalue = "16386"\n')
    problem = answer_problem(path)
    verdict = Verdict("puzzle0", [Criterion("correctness", True, "ok"), Criterion("diagnosis", False, problem.message),
                                  Criterion("performance", False, "slow")])
    async with puzzle_open(workspace) as (pilot, screen):
        screen.post_message(RunFinished("grade", result=Graded(verdict, problem)))
        await pilot.pause()
        text = panel_text(screen)
        assert text.startswith("answer.toml cannot be read")
        assert ('line 5: evidence #1 needs a metric name (text) and a value (a number); '
                'its value is text ("16386")') in text
        assert "write the number without quotes" in text and '  5 │ value = "16386"' in text


# -- results of every profiler --------------------------------------------------------------------


def record_real_profiles(ws, puzzle_id: str, tmp_path) -> dict[str, Path]:
    """A baseline profile by each profiler, read from real files recorded on GPUs (tests/fixtures):
    torch and ncu on the H100 (puzzle1's baseline), nsys on an A100 (a public export, nsys_exports.md)."""
    from tutor.profilers import nsys_sqlite

    export = tmp_path / "saxpy.sqlite"  # SQLite needs a real file
    export.write_bytes(gzip.decompress((FIXTURES / "nsys_saxpy_2022.2.sqlite.gz").read_bytes()))
    metrics = {"torch": ProfileMetrics.from_json((recording("puzzle1", "metrics.json")).read_text()),
               "ncu": ncu.extract(recording("puzzle1", "ncu.csv")),
               "nsys": nsys_sqlite.extract(export)}
    files = {"torch": "trace.json", "ncu": "profile.ncu-rep", "nsys": "profile.nsys-rep"}
    progress, paths = Progress(ws.db_path), {}
    for profiler, m in metrics.items():
        run_dir = ws.runs_dir / f"20250101-12000{len(paths)}-{puzzle_id}-profile-baseline-{profiler}"
        run_dir.mkdir(parents=True)
        paths[profiler] = run_dir / files[profiler]
        paths[profiler].write_text("")
        progress.record_profile(puzzle_id, "baseline", "c0de", m, paths[profiler], run_dir)
    return paths


async def test_trace_tab_gives_each_profilers_file_and_the_line_that_opens_it(workspace, tmp_path):
    needs_puzzle(workspace, "puzzle1")
    files = record_real_profiles(workspace, "puzzle1", tmp_path)
    app = make_app(workspace)
    async with app.run_test(size=(80, 24)) as pilot:
        app.push_screen(ResultsScreen(app.puzzles["puzzle1"], "trace"))
        results = await results_loaded(pilot, lambda record: record.profiles)
        assert results.profiler == "nsys"  # the newest profile's
        commands = {}
        for _ in files:
            commands[results.profiler] = str(results.query_one("#trace-command").render())
            assert files[results.profiler].name in str(results.query_one("#trace-path").render())
            await pilot.press("y")
            assert app.clipboard == commands[results.profiler]
            await pilot.press("f")  # the next profiler on record
        assert commands == {"torch": f"curl -sL {PERFETTO_SCRIPT} | python3 - -i {shell_path(files['torch'])}",
                            "ncu": f"ncu-ui {shell_path(files['ncu'])}",
                            "nsys": f"nsys-ui {shell_path(files['nsys'])}"}
        assert results.profiler == "nsys"  # round the three and back


async def test_a_memory_profile_shows_its_timeline_and_allocation_sites(workspace, tmp_path):
    from test_memory_profiler import dequantising_run, segments, write
    from tutor.app.widgets.kernels import MemoryTimeline
    from tutor.profilers.memory_snapshot import extract

    needs_puzzle(workspace, "puzzle1")
    snapshot = write(tmp_path, dequantising_run(), segments())
    run_dir = workspace.runs_dir / "20250101-120000-puzzle1-profile-baseline-memory"
    run_dir.mkdir(parents=True)
    Progress(workspace.db_path).record_profile("puzzle1", "baseline", "c0de", extract(snapshot, 4), snapshot, run_dir)
    app = make_app(workspace)
    async with app.run_test(size=(100, 40)) as pilot:
        app.push_screen(ResultsScreen(app.puzzles["puzzle1"], "kernels"))
        results = await results_loaded(pilot, lambda record: record.profiles)
        assert results.profiler == "memory"
        assert results.query_one(MemoryTimeline).display
        table = results.query_one(KernelTable)
        assert [str(c.label).rstrip(" ▼") for c in table.columns.values()] == [
            "share", "count", "MiB", "largest MiB", "phase", "allocated at"]
        assert table.sort_column == "total_mb" and table.get_row_at(0)[-1] == "workload.py:12 forward"
        await pilot.press("6")
        assert "_memory_viz trace_plot" in str(results.query_one("#trace-command").render())


async def test_an_nsight_compute_profile_shows_its_kernel_counters(workspace, tmp_path):
    needs_puzzle(workspace, "puzzle1")
    record_real_profiles(workspace, "puzzle1", tmp_path)
    app = make_app(workspace)
    async with app.run_test(size=(80, 24)) as pilot:
        app.push_screen(ResultsScreen(app.puzzles["puzzle1"], "kernels"))
        results = await results_loaded(pilot, lambda record: record.profiles)
        while results.profiler != "ncu":
            await pilot.press("f")
        table = results.query_one(KernelTable)
        assert {"SM %", "mem %", "occup %", "regs"} <= {str(c.label).rstrip(" ▼") for c in table.columns.values()}
        assert "category" not in table.column_keys  # Nsight Compute does not sort kernels into categories
        assert table.row_count == 5
        await pilot.press("s", "s", "s")  # from total µs: mean, count, then SM % (largest first)
        assert table.sort_column == "sm_throughput_pct"
        sm = [float(str(table.get_row_at(i)[table.column_keys.index("sm_throughput_pct")])) for i in range(5)]
        assert sm == sorted(sm, reverse=True)
        await pilot.press("2")
        head = str(results.query_one(".profile-head").render())
        assert "top kernel" in head and "SM throughput" in head and "profile.ncu-rep" in head


def test_a_path_in_an_opener_command_is_quoted_but_keeps_its_tilde():
    assert shell_path(Path.home() / "my ws" / "profile.ncu-rep") == "~/'my ws/profile.ncu-rep'"
    assert shell_path("/srv/runs/trace.json") == "/srv/runs/trace.json"


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


def test_tier_lines_close_together_label_only_the_higher():
    # puzzle0's 5x / 10x / 20x on an axis to 58x: 10x would share a row with 20x in a short plot.
    from tutor.app.widgets.attempts_plot import spaced_ticks

    tiers = get_puzzle("puzzle0").tiers
    assert [t.name for t in spaced_ticks(tiers, 58.0)] == ["gold", "bronze"]
    assert [t.name for t in spaced_ticks(tiers, 30.0)] == ["gold", "silver"]
    assert [t.name for t in spaced_ticks(tiers, 20.0)] == ["gold", "silver", "bronze"]
