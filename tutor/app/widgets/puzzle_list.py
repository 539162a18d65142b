"""Every puzzle, grouped by level, one line each: status, id, title, tier, best speed-up, can this machine run it."""

from __future__ import annotations

from textual.content import Content
from textual.widgets import OptionList, Static
from textual.widgets.option_list import Option

from tutor.catalog import Puzzle
from tutor.formatting import speedup
from tutor.machine import Readiness
from tutor.progress import PuzzleStatus

STATUS_MARK = {"new": ("○", "$foreground-muted"), "attempted": ("◐", "$text-warning"),
               "diagnosed": ("◑", "$text-accent"), "solved": ("●", "$text-success")}
TIER_STYLE = {"gold": "bold $text-warning", "silver": "bold $foreground", "bronze": "$text-accent"}
# (width, right-aligned) for mark, id, tier, best, machine; the title takes what is left.
FIXED = [(1, False), (8, False), (6, False), (7, True), (14, False)]


def _cell(text: str, width: int, right: bool = False, style: str = "") -> Content:
    text = text if len(text) <= width else text[: max(width - 1, 0)] + "…"
    padded = text.rjust(width) if right else text.ljust(width)
    return Content.styled(padded, style) if style else Content(padded)


def columns_line(width: int, cells: list[tuple[str, str]]) -> Content:
    """mark, id, title, tier, best, machine as fixed-width columns for a line `width` cells wide."""
    title_width = max(width - sum(w for w, _ in FIXED) - len(FIXED), 8)
    widths = [FIXED[0], FIXED[1], (title_width, False), *FIXED[2:]]
    parts = [_cell(text, w, right, style) for (text, style), (w, right) in zip(cells, widths)]
    return Content(" ").join(parts)


class PuzzleListHeader(Static):
    """Column titles over the PuzzleList, kept aligned with it on resize."""

    def on_resize(self) -> None:
        self.update(columns_line(self.content_size.width,
                                 [("", ""), ("id", ""), ("title", ""), ("tier", ""), ("best", ""), ("this machine", "")]))


class PuzzleList(OptionList):
    """Level headings are disabled options, so the cursor moves between puzzles only."""

    def __init__(self, puzzles: list[Puzzle], **kwargs) -> None:
        super().__init__(**kwargs)
        self.puzzles = puzzles
        self.statuses: dict[str, PuzzleStatus] = {}
        self.readiness: dict[str, Readiness] = {}

    def on_mount(self) -> None:
        self.rebuild()

    def on_resize(self) -> None:
        self.rebuild()

    def show(self, statuses: dict[str, PuzzleStatus] | None = None, readiness: dict[str, Readiness] | None = None) -> None:
        if statuses is not None:
            self.statuses = statuses
        if readiness is not None:
            self.readiness = readiness
        self.rebuild()

    @property
    def highlighted_id(self) -> str | None:
        if self.highlighted is None:
            return None
        return self.get_option_at_index(self.highlighted).id

    def rebuild(self) -> None:
        keep = self.highlighted_id
        width = max(self.scrollable_content_region.width, 40)
        options: list[Option] = []
        level = None
        for p in self.puzzles:
            if p.level != level:
                level = p.level
                count = sum(q.level == level for q in self.puzzles)
                options.append(Option(Content(f"Level {level} · {count} puzzle{'s' * (count != 1)}"),
                                      id=f"level-{level}", disabled=True))
            options.append(Option(self._line(p, width), id=p.id))
        self.set_options(options)
        ids = [o.id for o in options]
        first = next((i for i, o in enumerate(options) if not o.disabled), None)
        self.highlighted = ids.index(keep) if keep in ids else first

    def _line(self, p: Puzzle, width: int) -> Content:
        status = self.statuses.get(p.id)
        mark, mark_style = STATUS_MARK[status.status] if status else ("·", "$foreground-muted")
        tier = status.tier if status else ""
        best = speedup(status.best_speedup) if status and status.best_speedup is not None else ""
        ready = self.readiness.get(p.id)
        machine = ("…", "$foreground-muted") if ready is None else (
            ("✓ ready", "$text-success") if ready.ok else (f"✗ {ready.label}", "$text-error"))
        return columns_line(width, [(mark, mark_style), (p.id, "bold"), (p.title, ""),
                                    (tier or "—", TIER_STYLE.get(tier, "$foreground-muted")),
                                    (best or "—", "" if best else "$foreground-muted"), machine])
