"""The review after solving: a tab per good solution, its notes, and its code beside yours."""

from __future__ import annotations

from rich.syntax import Syntax
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Horizontal, VerticalScroll
from textual.screen import Screen
from textual.widgets import Footer, Header, Markdown, Static, TabbedContent, TabPane

from tutor.app.screens.dialog import Dialog
from tutor.review import Review, Solution

OPENED = {"early": "opened before solving (recorded)", "hints": "opened after every hint", "solved": "opened after solving"}


def notes_markdown(s: Solution) -> str:
    rows = [f"**{label}** {text}" for label, text in (("Why it is fast.", s.why), ("Measured.", s.measured),
                                                      ("What a profile shows.", s.profile)) if text]
    return "\n\n".join(rows)


def code_pane(title: str, code: str) -> VerticalScroll:
    pane = VerticalScroll(Static(Syntax(code or "# (no workload.py)", "python", line_numbers=True, word_wrap=True)),
                          classes="code panel")
    pane.border_title = title
    return pane


class ReviewScreen(Screen):
    CSS = """
    ReviewScreen TabPane { padding: 0; }
    ReviewScreen .notes { height: auto; max-height: 40%; padding: 0 1; }
    ReviewScreen .code { width: 1fr; height: 1fr; border: round $primary; border-title-color: $text-primary; }
    """
    BINDINGS = [Binding("escape", "app.pop_screen", "Back", tooltip="back to the puzzle"),
                Binding("q", "app.quit", "Quit", show=False, tooltip="quit")]

    def __init__(self, review: Review) -> None:
        super().__init__()
        self.review = review

    def compose(self) -> ComposeResult:
        yield Header()
        with TabbedContent():
            for s in self.review.solutions:
                with TabPane(f"{s.name} · {s.tier}", id=f"review-{s.name}"):
                    yield VerticalScroll(Markdown(notes_markdown(s)), classes="notes")
                    with Horizontal():
                        yield code_pane("yours", self.review.mine)
                        yield code_pane(s.title, s.code)
        yield Footer(compact=True)

    def on_mount(self) -> None:
        self.title = f"{self.review.puzzle} · review"
        self.sub_title = OPENED[self.review.opened_as]


class OpenEarly(Dialog):
    """Asked before a locked review opens: seeing it early is recorded."""

    DIALOG_TITLE = "Open the review before solving?"
    DIALOG_SUBTITLE = "y opens it · n or escape keeps it closed"
    BINDINGS = [Binding("y", "dismiss(True)", "Open it"), Binding("n,escape", "dismiss(False)", "Not yet")]

    def __init__(self, why: str) -> None:
        super().__init__()
        self.why = why

    def compose_body(self) -> ComposeResult:
        yield Static(self.why, classes="lead")
        yield Static("It shows the reference solution and the honest alternatives beside your code. "
                     "Your record will say you opened it before solving, whatever you reach after.")
