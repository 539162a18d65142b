"""A short card about one puzzle: what it is about, what it needs, where the learner stands, can it run here."""

from __future__ import annotations

from textual.content import Content
from textual.widgets import Static

from tutor.catalog import Puzzle
from tutor.formatting import speedup
from tutor.machine import Readiness
from tutor.progress import PuzzleStatus


def status_line(status: PuzzleStatus | None, separator: str = " · ") -> Content:
    """Solved or not, tier, attempts and best speed-up; `separator="\n"` for a narrow column."""
    if status is None:
        return Content.styled("…", "$foreground-muted")
    if status.status == "new":
        return Content.styled("not attempted yet", "$foreground-muted")
    state = Content.styled(status.status, "bold $text-success" if status.status == "solved" else "bold $text-warning")
    if status.tier:
        state = Content.assemble(state, f" · tier {status.tier}")
    tries = f"{status.attempts} attempt{'s' * (status.attempts != 1)} · best {speedup(status.best_speedup)}"
    return Content.assemble(state, separator, tries)


def readiness_line(ready: Readiness | None) -> Content:
    if ready is None:
        return Content.styled("checking this machine…", "$foreground-muted")
    if ready.ok:
        return Content.styled("✓ This machine can run it.", "$text-success")
    return Content.assemble(("✗ ", "$text-error"), (ready.label, "bold $text-error"), ": ", ready.why)


HARNESS_WORDS = {  # short: the line lives in a narrow column
    "off": ("○ harness: cold starts", "$foreground-muted"),
    "warming": ("◌ harness warming…", "$text-warning"),
    "ready": ("● harness warm", "$text-success"),
    "failed": ("○ harness failed to warm", "$text-warning"),
}


def harness_line(state: str) -> Content:
    """The warm harness the app owns (tutor.warm), in a line."""
    return Content.styled(*HARNESS_WORDS[state])


class PuzzleCard(Static):
    """Filled by its screen with `show(...)`."""

    def show(self, puzzle: Puzzle | None, status: PuzzleStatus | None, ready: Readiness | None) -> None:
        if puzzle is None:
            self.update("")
            return
        self.border_title = f"{puzzle.id} · level {puzzle.level}"
        label = "$foreground-muted"
        self.update(Content("\n").join([
            Content.styled(puzzle.title, "bold"),
            Content(puzzle.summary),
            Content.assemble(("needs    ", label), puzzle.hardware.needs(), ("   profilers ", label),
                             ", ".join(puzzle.profilers)),
            Content.assemble(("progress ", label), status_line(status)),
            readiness_line(ready),
        ]))
