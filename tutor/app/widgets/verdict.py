"""A verdict per criterion: pass or fail, why, and (in full) every detail the grader gave."""

from __future__ import annotations

from textual.app import ComposeResult
from textual.containers import Horizontal, Vertical
from textual.content import Content
from textual.widgets import Static

from tutor.formatting import speedup
from tutor.grading.verdict import Criterion, Verdict

MARK_WIDTH = len("✓ PASS ")
# Puzzles add criteria of their own (graders/): the name column fits the longest name up to this,
# so the reasons keep at least ~half of an 80-column screen; a longer name wraps.
MAX_NAME_WIDTH = 30


def verdict_title(v: Verdict) -> str:
    name, first = next(iter(v.speedups.items()), (None, None))
    ratio = f" · {speedup(first['median'])} vs {name}" if first else ""
    return f"Solved — tier {v.tier}{ratio}" if v.passed else f"Not solved yet{ratio}"


class CriterionRow(Horizontal):
    """`✓ PASS name` on the left, the summary (and details) beside it, wrapped under itself."""

    def __init__(self, criterion: Criterion, details: bool, name_width: int) -> None:
        super().__init__(classes="-pass" if criterion.passed else "-fail")
        self.criterion, self.details, self.name_width = criterion, details, name_width

    def compose(self) -> ComposeResult:
        c = self.criterion
        mark = Content.styled("✓ PASS", "bold $text-success") if c.passed else Content.styled("✗ FAIL", "bold $text-error")
        name = Static(Content.assemble(mark, " ", (c.name, "bold")), classes="criterion-name")
        name.styles.width = self.name_width
        yield name
        body = [Content(c.summary)]
        if self.details:
            body += [Content.styled(d, "$foreground-muted") for d in c.details]
        yield Static(Content("\n").join(body), classes="criterion-text")


class VerdictView(Vertical):
    """Empty until `show(verdict)`; any number of criteria, by any names; `details=False` keeps one reason each."""

    DEFAULT_CSS = """
    VerdictView { height: auto; }
    CriterionRow { height: auto; }
    CriterionRow .criterion-name { padding-right: 1; }
    CriterionRow .criterion-text { width: 1fr; }
    VerdictView .next-hint { color: $text-accent; }
    """

    def __init__(self, details: bool = True, **kwargs) -> None:
        super().__init__(**kwargs)
        self.details = details

    def show(self, v: Verdict | None) -> None:
        self.remove_children()
        if v is None:
            return
        # + 2: a gap of two cells before the reasons (one of them the name's padding, kept when a name wraps)
        width = min(max((len(c.name) for c in v.criteria), default=0) + MARK_WIDTH + 2, MAX_NAME_WIDTH)
        rows: list = [CriterionRow(c, self.details, width) for c in v.criteria]
        if v.next_hint:
            rows.append(Static("A hint is available: press h on the puzzle.", classes="next-hint"))
        self.mount_all(rows)
