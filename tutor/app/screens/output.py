"""The full output tail of a failed run, one key away from the problem panel."""

from __future__ import annotations

from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Vertical
from textual.screen import ModalScreen
from textual.widgets import Footer, Static, TextArea

from tutor.errors import TutorError


class OutputScreen(ModalScreen):
    CSS_PATH = "modal.tcss"
    BINDINGS = [Binding("escape,o,q", "dismiss", "Close")]

    def __init__(self, error: TutorError) -> None:
        super().__init__()
        self.error = error

    def compose(self) -> ComposeResult:
        with Vertical(classes="dialog wide") as box:
            box.border_title = "Output of the workload (last lines)"
            yield Static(self.error.message, classes="lead")
            yield TextArea(self.error.output_tail, read_only=True, show_line_numbers=False, id="tail")
        yield Footer(compact=True)

    def on_mount(self) -> None:
        tail = self.query_one("#tail", TextArea)
        tail.focus()
        tail.scroll_end(animate=False)
