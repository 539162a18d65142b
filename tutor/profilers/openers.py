"""How a learner opens what a profiler wrote (a trace, a report) in that profiler's own viewer.

Each profiler's record (tutor.profilers.registry) holds one `Opener`: the file it writes,
the one-line shell command that opens it, and what to look at first once it is open.
"""

from __future__ import annotations

import shlex
from dataclasses import dataclass
from pathlib import Path

from tutor.formatting import short_path


@dataclass(frozen=True)
class Opener:
    noun: str  # what the file is called on screen: trace, report
    file_kind: str  # the profiler and the file's format
    viewer: str
    command_template: str  # {path}: the file, shell-quoted
    shell: str  # with what the command opens it
    gui: str  # how to open it without a shell
    remote: str  # what to do when the tutor runs on another machine
    look_for: tuple[str, ...]

    def command(self, path: Path | str) -> str:
        """The one line that opens `path` (written with ~ for the home folder, so it stays short)."""
        return self.command_template.format(path=shell_path(path))


def shell_path(path: Path | str) -> str:
    """`path` for a shell command line: ~ for the home folder (unquoted, so the shell expands it), the rest quoted."""
    short = short_path(path)
    if short.startswith("~/"):
        return "~/" + shlex.quote(short[2:])
    return shlex.quote(short)
