"""The harness's side of the event pipe."""

from __future__ import annotations

import os

from tutor.protocol import EVENT_FD_ENV, NONCE_FD_ENV, encode


class EventSink:
    """Writes protocol events to the fd the tutor passed; to nowhere when run by hand.

    Made before any learner code loads: the fds leave the environment and the nonce
    is read from its pipe, which is closed, so only this object knows it.
    """

    def __init__(self) -> None:
        fd, nonce_fd = os.environ.pop(EVENT_FD_ENV, None), os.environ.pop(NONCE_FD_ENV, None)
        self._fd = int(fd) if fd else None
        self._nonce = ""
        if nonce_fd:
            with os.fdopen(int(nonce_fd), "rb") as pipe:
                self._nonce = pipe.read().decode()

    def close(self) -> None:
        """Forget the pipe and the nonce: a forked workload process must not speak for the harness."""
        if self._fd is not None:
            os.close(self._fd)
        self._fd, self._nonce = None, ""

    def emit(self, event_type: str, **fields) -> None:
        if self._fd is not None:
            os.write(self._fd, encode(event_type, nonce=self._nonce, **fields))

    def stage(self, stage: str, detail: str = "") -> None:
        self.emit("stage", stage=stage, detail=detail)

    def progress(self, stage: str, done: int, total: int) -> None:
        self.emit("progress", stage=stage, done=done, total=total)
