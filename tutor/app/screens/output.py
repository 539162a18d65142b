"""The full output tail of a failed run, one key away from the problem panel."""

from __future__ import annotations

from textual.app import ComposeResult
from textual.binding import Binding
from textual.widgets import Static, TextArea

from tutor.app.screens.dialog import Dialog
from tutor.errors import TutorError


class OutputScreen(Dialog):
    BINDINGS = [Binding("escape,o,q", "dismiss", "Close")]
    DIALOG_TITLE = "Output of the workload (last lines)"
    WIDE = True

    def __init__(self, error: TutorError) -> None:
        super().__init__()
        self.error = error

    def compose_body(self) -> ComposeResult:
        yield Static(self.error.message, classes="lead")
        yield TextArea(self.error.output_tail, read_only=True, show_line_numbers=False, id="tail")

    def on_mount(self) -> None:
        tail = self.query_one("#tail", TextArea)
        tail.focus()
        tail.scroll_end(animate=False)
