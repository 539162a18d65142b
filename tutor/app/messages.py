"""Messages that travel upward: from run workers, the file watcher and widgets to their screen."""

from __future__ import annotations

from pathlib import Path

from textual.message import Message

from tutor.errors import TutorError


class HarnessEvent(Message):
    """A stage or progress event streamed from the harness subprocess (tutor.protocol)."""

    def __init__(self, event: dict) -> None:
        super().__init__()
        self.event = event


class RunFinished(Message):
    """A run ended: `result` (Verdict or ProfileOutcome) or `error`, never both."""

    def __init__(self, kind_key: str, result: object = None, error: TutorError | None = None) -> None:
        super().__init__()
        self.kind_key, self.result, self.error = kind_key, result, error


class FilesSaved(Message):
    """Watch mode saw a save to one of the puzzle's editable files."""

    def __init__(self, paths: list[Path]) -> None:
        super().__init__()
        self.paths = paths


class EditFile(Message):
    """The learner asked to open an editable file in $EDITOR."""

    def __init__(self, path: Path) -> None:
        super().__init__()
        self.path = path
