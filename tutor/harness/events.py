"""The harness's side of the event pipe."""

from __future__ import annotations

import os

from tutor.protocol import EVENT_FD_ENV, encode


class EventSink:
    """Writes protocol events to the fd the tutor passed; to nowhere when run by hand."""

    def __init__(self) -> None:
        fd = os.environ.get(EVENT_FD_ENV)
        self._fd = int(fd) if fd else None

    def emit(self, event_type: str, **fields) -> None:
        if self._fd is not None:
            os.write(self._fd, encode(event_type, **fields))

    def stage(self, stage: str, detail: str = "") -> None:
        self.emit("stage", stage=stage, detail=detail)

    def progress(self, stage: str, done: int, total: int) -> None:
        self.emit("progress", stage=stage, done=done, total=total)
