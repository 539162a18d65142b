"""The box the help, taxonomy and output-tail screens share: a titled dialog over the current screen."""

from __future__ import annotations

from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Vertical, VerticalScroll
from textual.screen import ModalScreen
from textual.widgets import Footer


class Dialog(ModalScreen):
    """Subclasses give a title and `compose_body()`; escape (or q) closes it."""

    CSS_PATH = "modal.tcss"
    BINDINGS = [Binding("escape,q", "dismiss", "Close")]
    DIALOG_TITLE = ""
    DIALOG_SUBTITLE = "escape closes"
    WIDE = False  # the whole screen, for long text; a narrow dialog scrolls its body instead

    def compose(self) -> ComposeResult:
        box = Vertical(classes="dialog wide") if self.WIDE else VerticalScroll(classes="dialog")
        box.border_title, box.border_subtitle = self.DIALOG_TITLE, self.DIALOG_SUBTITLE
        with box:
            yield from self.compose_body()
        yield Footer(compact=True)

    def compose_body(self) -> ComposeResult:
        yield from ()
