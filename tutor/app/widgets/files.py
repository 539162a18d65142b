"""The puzzle's editable files in the learner's workspace: pick one, and `e` or enter opens it."""

from __future__ import annotations

from pathlib import Path

from textual.content import Content
from textual.widgets import OptionList
from textual.widgets.option_list import Option

from tutor.app.messages import EditFile
from tutor.catalog import Puzzle
from tutor.workspace import Workspace


class EditableFiles(OptionList):
    """One option per editable file, marked when it differs from the starter copy."""

    def __init__(self, ws: Workspace, puzzle: Puzzle, **kwargs) -> None:
        super().__init__(**kwargs)
        self.ws, self.puzzle = ws, puzzle

    def on_mount(self) -> None:
        self.refresh_files()

    def refresh_files(self) -> None:
        keep = self.highlighted or 0
        options = []
        for name in self.puzzle.editable:
            path = self.ws.editable_path(self.puzzle, name)
            state = _state(path, self.puzzle.starter_file(name))
            style = {"edited": "$text-accent", "missing": "$text-error"}.get(state, "$foreground-muted")
            options.append(Option(Content.assemble((name, "bold"), " ", (state, style)), id=name))
        self.set_options(options)
        self.highlighted = min(keep, len(options) - 1)

    @property
    def selected_path(self) -> Path:
        index = self.highlighted or 0
        return self.ws.editable_path(self.puzzle, self.puzzle.editable[index])

    def on_option_list_option_selected(self, event: OptionList.OptionSelected) -> None:
        event.stop()
        self.post_message(EditFile(self.ws.editable_path(self.puzzle, event.option.id)))


def _state(path: Path, starter: Path) -> str:
    if not path.exists():
        return "missing"
    try:
        return "starter" if path.read_bytes() == starter.read_bytes() else "edited"
    except OSError:
        return "edited"
