"""The infprof-tutor Textual app: browse puzzles, read one, profile and grade it, see the results.

Start-up loads the catalog and the screens only: the grading stack (and pandas,
for traces) loads when the first run starts, and torch never loads here at all.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Iterable

from textual.app import App, SystemCommand
from textual.binding import Binding
from textual.reactive import reactive
from textual.screen import Screen

from tutor.app.settings import load_settings, save_setting
from tutor.catalog import Puzzle, all_puzzles
from tutor.machine import Machine
from tutor.workspace import DEFAULT_NAME, Workspace


WARM_WAIT_S = 300.0  # a slow disk's first import of torch; past this the harness is reported failed


class InfprofApp(App[int]):
    """One workspace, every puzzle in the catalog; the theme picked in the palette is remembered."""

    TITLE = "infprof-tutor"
    CSS_PATH = Path(__file__).with_name("app.tcss")  # absolute: subclasses (tests, benchmarks) live elsewhere
    BINDINGS = [
        Binding("question_mark", "help", "Help", key_display="?", tooltip="this help: every key of the screen"),
        Binding("f1", "help", "Help", show=False, tooltip="this help"),
        Binding("q", "quit", "Quit", tooltip="quit (a run in progress is stopped)"),
    ]

    # None until probed (a worker: nvidia-smi can take a moment); screens watch it.
    machine: reactive[Machine | None] = reactive(None, init=False)
    # The warm harness this app owns (tutor.warm): off, warming, ready or failed; screens watch it.
    harness: reactive[str] = reactive("off", init=False)

    def __init__(self, workspace: Workspace | None, *, machine: Machine | None = None,
                 new_workspace_dir: Path | None = None) -> None:
        super().__init__()
        self.workspace = workspace
        self.new_workspace_dir = new_workspace_dir or Path.cwd() / DEFAULT_NAME
        self._given_machine = machine
        self.puzzles: dict[str, Puzzle] = all_puzzles()
        remembered = load_settings().get("theme")
        if remembered in self.available_themes:
            self.theme = remembered

    def on_mount(self) -> None:
        self.theme_changed_signal.subscribe(self, lambda theme: save_setting("theme", theme.name))
        if self._given_machine is not None:
            self.machine = self._given_machine
        else:
            self.probe_machine()
        self.warm_harness()
        if self.workspace is None:
            from tutor.app.screens.setup import WorkspaceSetupScreen

            self.push_screen(WorkspaceSetupScreen(self.new_workspace_dir))
        else:
            self.use_workspace(self.workspace)

    def probe_machine(self) -> None:
        def probe() -> None:
            from tutor.machine import this_machine

            machine = this_machine()
            self.call_from_thread(setattr, self, "machine", machine)

        self.run_worker(probe, thread=True, name="probe machine", group="machine")

    def warm_harness(self) -> None:
        """Start a warm harness owned by this app (unless INFPROF_WARM=0): runs then skip torch's import,
        and it ends when the app does."""
        from tutor.warm import WarmHarness, warm_mode

        if warm_mode() == "off":
            return

        def warm() -> None:
            harness = WarmHarness.for_env()
            self.call_from_thread(setattr, self, "harness", harness.start(owner=os.getpid()))
            ready = harness.wait_ready(timeout_s=WARM_WAIT_S, owner=os.getpid())
            self.call_from_thread(setattr, self, "harness", "ready" if ready else "failed")

        self.run_worker(warm, thread=True, name="warm harness", group="harness")

    def show_browser(self) -> None:
        from tutor.app.screens.browser import BrowserScreen

        self.switch_screen(BrowserScreen()) if len(self.screen_stack) > 1 else self.push_screen(BrowserScreen())

    def use_workspace(self, workspace: Workspace) -> None:
        """Show the puzzles of `workspace` (given at start, or made by the setup screen)."""
        self.workspace = workspace
        self.sub_title = _short(workspace.root)
        self.show_browser()

    def open_puzzle(self, puzzle_id: str, start: str | None = None) -> None:
        """Show a puzzle on top of the browser; `start` names a run to begin at once (grade, profile-…)."""
        from tutor.app.screens.puzzle import PuzzleScreen

        if self.workspace is None:
            self.notify("Create a workspace first.", severity="warning")
            return
        while len(self.screen_stack) > 2:
            self.pop_screen()
        self.push_screen(PuzzleScreen(self.puzzles[puzzle_id], start=start))

    def action_help(self) -> None:
        from tutor.app.screens.help import HelpScreen

        if not isinstance(self.screen, HelpScreen):
            self.push_screen(HelpScreen(self.screen))

    def get_system_commands(self, screen: Screen) -> Iterable[SystemCommand]:
        from tutor.app import commands
        from tutor.app.screens.puzzle import PuzzleScreen
        from tutor.app.screens.results import ResultsScreen

        if isinstance(screen, PuzzleScreen):
            yield from commands.puzzle_commands(screen)
        elif isinstance(screen, ResultsScreen):
            yield from commands.results_commands(screen)
        yield from commands.app_commands(self)
        yield from super().get_system_commands(screen)

    def action_doctor(self) -> None:
        from tutor.app.screens.help import DoctorScreen

        self.push_screen(DoctorScreen())

    def action_diagnose(self) -> None:
        from tutor.app.screens.diagnose import DiagnoseScreen

        if self.workspace is not None:
            self.push_screen(DiagnoseScreen())

    def action_taxonomy(self) -> None:
        from tutor.app.screens.help import TaxonomyScreen

        self.push_screen(TaxonomyScreen())


def _short(path: Path) -> str:
    from tutor.formatting import short_path

    return short_path(path)
