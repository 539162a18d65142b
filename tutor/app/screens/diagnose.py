"""`infprof-tutor diagnose` in the app: a command of the learner's own, profiled and diagnosed, and the reports kept
in their history, newest first (the same text the CLI prints)."""

from __future__ import annotations

import shlex

from textual import on, work
from textual.app import ComposeResult
from textual.containers import VerticalScroll
from textual.widgets import Input, LoadingIndicator, Static

from tutor.app.screens.dialog import Dialog
from tutor.app.threads import show_on_screen
from tutor.errors import TutorError


class DiagnoseScreen(Dialog):
    DIALOG_TITLE = "Diagnose your own workload"
    DIALOG_SUBTITLE = "enter runs it · escape closes"
    WIDE = True

    def compose_body(self) -> ComposeResult:
        yield Static("After the puzzles: the command you run your model with (python serve.py ARGS). It runs "
                     "once under the PyTorch profiler; the report ranks the bottleneck classes its profile supports.",
                     classes="lead")
        yield Input(placeholder="python serve.py --steps 20", id="command")
        yield VerticalScroll(Static(id="reports"), id="report-box")

    def on_mount(self) -> None:
        self.query_one("#command", Input).focus()
        self.load_history()

    @work(thread=True, exclusive=True, group="diagnose")
    def load_history(self) -> None:
        from tutor.progress import Progress

        rows = Progress(self.app.workspace.db_path).workload_diagnoses(5)
        show_on_screen(self, self._show_history, rows)

    def _show_history(self, rows: list[dict]) -> None:
        import time

        from tutor.diagnose.text import report_text

        for spinner in self.query(LoadingIndicator):
            spinner.remove()
        if not rows:
            self.query_one("#reports", Static).update("No report yet: give a command above.")
            return
        parts = [f"{time.strftime('%Y-%m-%d %H:%M', time.localtime(r['created_at']))}  {r['target']}\n\n"
                 f"{report_text(r['report'])}" for r in rows]
        self.query_one("#reports", Static).update("\n\n".join(parts))

    @on(Input.Submitted, "#command")
    def run_command(self, event: Input.Submitted) -> None:
        try:
            command = shlex.split(event.value)
        except ValueError as e:
            self._show_problem(TutorError(f"The command cannot be read: {e}.", "Quote it as a shell would."))
            return
        self.query_one("#reports", Static).update(f"Profiling {event.value} ...")
        self.query_one("#report-box").mount(LoadingIndicator(), before=0)
        self.diagnose(command)

    @work(thread=True, exclusive=True, group="diagnose")
    def diagnose(self, command: list[str]) -> None:
        from tutor.diagnose.capture import diagnose_command

        try:
            diagnose_command(self.app.workspace, command)
        except TutorError as e:
            show_on_screen(self, self._show_problem, e)
            return
        self.load_history()

    def _show_problem(self, e: TutorError) -> None:
        for spinner in self.query(LoadingIndicator):
            spinner.remove()
        self.query_one("#reports", Static).update(f"{e.message}\n{e.advice}")
