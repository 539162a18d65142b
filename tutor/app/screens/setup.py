"""No workspace yet: offer to create one (the same as `infprof-tutor init DIR`)."""

from __future__ import annotations

from pathlib import Path

from textual import on
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Horizontal, Vertical
from textual.content import Content
from textual.screen import Screen
from textual.widgets import Button, Footer, Header, Input, Static

from tutor.errors import TutorError
from tutor.formatting import short_path

INTRO = ("A workspace holds your copy of every puzzle's files (you edit them there), and a .infprof/ folder "
         "with your progress database and the traces of your runs. Nothing else on your machine is touched.")


class WorkspaceSetupScreen(Screen):
    CSS_PATH = "setup.tcss"
    HELP_TITLE = "workspace setup"
    BINDINGS = [Binding("escape", "app.quit", "Quit")]

    def __init__(self, suggested: Path) -> None:
        super().__init__()
        self.suggested = suggested

    def compose(self) -> ComposeResult:
        yield Header()
        with Vertical(id="setup") as box:
            box.border_title = "Welcome to infprof-tutor"
            yield Static(Content.from_markup("[b]No workspace found here.[/b]"), classes="lead")
            yield Static(INTRO, classes="muted")
            yield Static("Create it in:", id="where-label")
            yield Input(short_path(self.suggested), id="where")
            yield Static(id="setup-problem")
            with Horizontal(id="setup-buttons"):
                yield Button("Create workspace", variant="primary", id="create")
                yield Button("Quit", id="quit")
        yield Footer(compact=True)

    def on_mount(self) -> None:
        self.query_one("#create").focus()

    @on(Input.Submitted)
    @on(Button.Pressed, "#create")
    def create(self) -> None:
        from tutor.workspace import init_workspace

        text = self.query_one("#where", Input).value.strip()
        if not text:
            self.query_one("#setup-problem", Static).update("Type a folder for the workspace.")
            return
        try:
            ws = init_workspace(Path(text).expanduser())
        except (OSError, TutorError) as e:
            self.query_one("#setup-problem", Static).update(Content.styled(f"Could not create it: {e}", "$text-error"))
            return
        self.notify(f"Workspace ready at {short_path(ws.root)}.", title="Created")
        self.app.use_workspace(ws)

    @on(Button.Pressed, "#quit")
    def quit(self) -> None:
        self.app.exit(0)
