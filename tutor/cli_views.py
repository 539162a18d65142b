"""Rich renderables for the CLI: puzzle list, puzzle page, metrics, verdict, quick check, errors."""

from __future__ import annotations

from typing import TYPE_CHECKING

from rich import box
from rich.console import Group
from rich.markdown import Markdown
from rich.panel import Panel
from rich.syntax import Syntax
from rich.table import Table
from rich.text import Text

from tutor.brief import grading_markdown, story_markdown
from tutor.catalog import Puzzle
from tutor.errors import TutorError
from tutor.formatting import KERNEL_COLUMNS, kernel_cell, kernel_columns, label_column, metric_value
from tutor.grading.answer import AnswerError
from tutor.grading.verdict import Verdict
from tutor.metrics import ProfileMetrics, describe
from tutor.profilers.registry import opener_for
from tutor.progress import PuzzleStatus
from tutor.records import compare_rows

if TYPE_CHECKING:
    from tutor.calibration import Calibration
    from tutor.doctor import Report
    from tutor.machine import Readiness
    from tutor.review import Review
    from tutor.quick_check import QuickCheck  # loads the grading stack: only the commands that check do

STATUS_STYLE = {"new": "dim", "attempted": "yellow", "diagnosed": "cyan", "solved": "green"}
NARROW = 100  # columns: under this a table drops or moves what would squeeze its cells (80 x 24 terminals)


def puzzle_table(puzzles: list[Puzzle], statuses: dict[str, PuzzleStatus], here: dict[str, Readiness],
                 width: int = 120) -> Table:
    """Every puzzle with the learner's status, and whether this machine can run it (the TUI's column). Under NARROW
    columns a puzzle keeps one line: its title cut short, CPU or GPU left to the `here` column."""
    narrow = width < NARROW
    table = Table(title="infprof-tutor puzzles", title_justify="left",
                  caption="here: whether this machine can run it (why, and the fix: infprof-tutor doctor)",
                  caption_justify="left", box=box.SIMPLE_HEAD if narrow else box.HEAVY_HEAD, pad_edge=not narrow)
    rows = []
    for p in puzzles:
        s, ready = statuses[p.id], here[p.id]
        best = f"{s.best_speedup:.2f}x" if s.best_speedup is not None else ""
        needs = () if narrow else ("CPU" if p.hardware.device == "cpu" else "GPU",)
        rows.append((p.id, str(p.level), p.title, *needs, Text(ready.label, style="green" if ready.ok else "yellow"),
                     Text(s.status, style=STATUS_STYLE[s.status]), s.tier, best))
    columns = ("id", "lvl", "title", *(() if narrow else ("needs",)), "here", "status", "tier", "best")
    widest = [max([len(col), *(len(str(row[i])) for row in rows)]) for i, col in enumerate(columns)]
    # Under NARROW every other column whole, the title given what is left (a column's padding and divider take 3).
    left = width - sum(w for col, w in zip(columns, widest) if col != "title") - 3 * len(columns) - 2
    for col, wide in zip(columns, widest):
        if not narrow:
            table.add_column(col)
        elif col == "title":
            table.add_column(col, no_wrap=True, overflow="ellipsis", max_width=max(left, 10))
        else:
            table.add_column(col, no_wrap=True, width=wide)
    for row in rows:
        table.add_row(*row)
    return table


def calibration_lines(calibrations: dict[str, Calibration | None]) -> list[str]:
    """Under the puzzle list: which puzzles' tiers were verified on this card, which fall short here, which are not
    yet checked (tutor.calibration.here: each puzzle this machine runs)."""
    verified = [pid for pid, c in calibrations.items() if c is not None and c.verified]
    unchecked = [pid for pid, c in calibrations.items() if c is None]
    short = [pid for pid, c in calibrations.items() if c is not None and not c.verified]
    lines = []
    if verified:
        lines.append(f"Tiers verified on this card: {', '.join(verified)}.")
    if short:
        lines.append(f"Short of their top tier on this card (infprof-tutor show says by how much): {', '.join(short)}.")
    if unchecked:
        lines.append(f"Tiers not yet checked on this card: {len(unchecked)} of the puzzles it runs "
                     "(infprof-tutor calibrate grades their own references here, once).")
    return lines


def puzzle_page(p: Puzzle, editable_paths: list[str], done: str | None = None) -> Group:
    """The puzzle's story and grading; then its files and how to begin, or (`done`: solved at gold) what is next."""
    files = "\n".join(f"  {path}" for path in editable_paths)
    then = done or f"Then: infprof-tutor profile {p.id} · infprof-tutor grade {p.id}"
    return Group(
        Text(f"{p.id} · level {p.level} · {p.title}", style="bold"),
        Markdown(story_markdown(p)),
        Markdown(grading_markdown(p)),  # the TUI's own words: tiers, their clocks, what a diagnosis needs
        Text(f"Edit:\n{files}\n{then}"),
    )


def metrics_view(m: ProfileMetrics, top: int = 12, width: int = 120) -> Group:
    """The metrics, then the top kernels (or allocation sites). Under NARROW columns a metric's meaning goes under
    its name, and a kernel's name under the table, numbered, so no cell is squeezed to a few characters."""
    narrow = width < NARROW
    values = Table(title="Metrics (cite these names in answer.toml)", title_justify="left")
    # The name whole: it is what a learner copies into answer.toml (a name has no spaces: it is never broken).
    values.add_column("metric" + (" (meaning)" if narrow else ""), no_wrap=not narrow)
    values.add_column("value", justify="right")
    values.add_column("in answer.toml", justify="right", style="dim")
    if not narrow:
        values.add_column("meaning", style="dim")
    # The TUI's order and units (key figures first), and the plain number a learner cites.
    for name, value, _ in compare_rows(m, None):
        meaning = describe(name)
        if narrow:
            values.add_row(Text(name) + Text(f"\n{meaning}", style="dim") if meaning else Text(name),
                           metric_value(name, value), f"{value:.6g}")
        else:
            values.add_row(name, metric_value(name, value), f"{value:.6g}", meaning)
    parts = [values]
    if m.kernels:
        label = label_column(m.kernels)
        what = "allocation sites" if label == "site" else "operators by self time" if m.device == "cpu" else "kernels"
        kernels = Table(title=f"Top {what} ({m.device})", title_justify="left")
        keys = kernel_columns(m.kernels)  # the TUI's columns: what this profiler's rows have
        shown = [key for key in keys if key != label] if narrow else keys
        if narrow:
            kernels.add_column("#", justify="right")
        for key in shown:
            column = KERNEL_COLUMNS[key]
            kernels.add_column(column.title, justify="right" if column.numeric else "left",
                               max_width=60 if key in ("name", "site") else None, overflow="ellipsis",
                               no_wrap=key in ("name", "site"))
        for i, k in enumerate(m.kernels[:top], start=1):
            kernels.add_row(*((str(i),) if narrow else ()), *(kernel_cell(k.get(key), KERNEL_COLUMNS[key]) for key in shown))
        parts.append(kernels)
        if narrow:  # each name whole, under the table
            parts.append(Text("\n".join(f"{i:>3}. {kernel_cell(k.get(label), KERNEL_COLUMNS[label])}"
                                        for i, k in enumerate(m.kernels[:top], start=1)), style="dim"))
    return Group(*parts)


def how_to_open(profiler_id: str, path, recorded: bool = False) -> str:
    """Where a profile's file is (or a recording's, study mode's copy), and the one line that opens it: the path and
    the command each whole on a line of its own, to copy and paste (print it with soft_wrap=True: no line is
    broken)."""
    opener = opener_for(profiler_id, recorded)
    return (f"{opener.noun.capitalize()} ({opener.file_kind}):\n{path}\nOpen it in {opener.viewer} {opener.shell}:\n{opener.command(path)}\n"
            f"(or {opener.gui})")


def verdict_view(v: Verdict, brief: tuple[str, ...] = ()) -> Group:
    """Every criterion with its details; those named in `brief` by their summary alone (a panel follows)."""
    parts = []
    for c in v.criteria:
        mark = Text("PASS ", style="bold green") if c.passed else Text("FAIL ", style="bold red")
        body = Text("" if c.name in brief else "\n".join(f"  {d}" for d in c.details), style="dim")
        parts.append(Group(mark + Text(f"{c.name}: {c.summary}"), *([body] if body else [])))
    headline = (Text(f"Solved — tier {v.tier}", style="bold green") if v.passed
                else Text("Not solved yet", style="bold red"))
    if v.next_hint:
        parts.append(Text(v.next_hint, style="cyan"))
    return Group(Panel(Group(*parts), title=headline, title_align="left"))


def diagnosis_view(v: Verdict) -> Panel:
    """A diagnosis graded in study mode: the diagnosis criterion alone, and that it is not a solve."""
    [c] = v.criteria
    body = Text(c.summary + "\n", style="bold") + Text("\n".join(f"  {d}" for d in c.details), style="dim")
    title = "Diagnosed (from the recording)" if c.passed else "Not diagnosed yet"
    return Panel(body, title=title, title_align="left", border_style="cyan" if c.passed else "red")


def quick_check_view(q: QuickCheck) -> Panel:
    """A tutor.quick_check.QuickCheck: what it found, and that it is not a grade."""
    body = Text()
    for good, line in q.findings():
        body.append("ok   " if good else "FAIL ", style="bold green" if good else "bold red")
        body.append(line + "\n")
    body.append(f"A quick check, not a grade: nothing is recorded. `infprof-tutor grade {q.puzzle}` grades "
                "for real, with your diagnosis.", style="dim")
    good = q.correct and bool(q.tier)
    title = "Quick check · not correct"
    if q.correct:
        title = f"Quick check · correct · {q.speedup.median:.2f}x vs {q.vs}"
    return Panel(body, title=title, title_align="left", border_style="green" if good else "yellow")


def answer_view(e: AnswerError) -> Panel:
    """answer.toml could not be read: where, the line itself, and how the file is written."""
    body = Text(e.message, style="bold")
    body.append(f"\nin {e.path}", style="dim")
    for line in e.excerpt():
        body.append("\n" + line, style="yellow")
    body.append("\n" + e.advice)
    return Panel(body, title=f"{e.path.name} cannot be read", title_align="left", border_style="red")


def error_view(e: TutorError) -> Panel:
    body = Text(e.message, style="bold")
    if e.advice:
        body.append("\n" + e.advice)
    if e.output_tail:
        body.append("\n\nLast output of the workload:\n", style="dim")
        body.append(e.output_tail[-1500:], style="dim")
    return Panel(body, title="Problem", title_align="left", border_style="red")


def review_view(review: Review, side_by_side: bool = False) -> Group:
    """Each solution with why it is fast, its numbers and what profile shows it, beside or after your code."""
    opened = {"early": "opened before solving (recorded)", "hints": "opened after every hint",
              "solved": "opened after solving"}[review.opened_as]
    parts: list = [Text(f"Review of {review.puzzle}: {opened}", style="bold")]
    mine = Syntax(review.mine or "# (no workload.py)", "python", line_numbers=True, word_wrap=True)
    if not side_by_side:
        parts.append(Panel(mine, title="yours", title_align="left"))
    for s in review.solutions:
        notes = Table.grid(padding=(0, 2))
        for label, text in (("why", s.why), ("measured", s.measured), ("profile", s.profile)):
            if text:
                notes.add_row(Text(label, style="bold"), text)
        code = Syntax(s.code, "python", line_numbers=True, word_wrap=True)
        if side_by_side:
            pair = Table.grid(padding=(0, 1), expand=True)
            pair.add_column(ratio=1)
            pair.add_column(ratio=1)
            pair.add_row(Panel(mine, title="yours", title_align="left"),
                         Panel(code, title=s.title, title_align="left"))
            code = pair
        parts.append(Panel(Group(notes, code), title=f"{s.title} · {s.tier}", title_align="left"))
    return Group(*parts)


# A mark and its style per state: dev check's checks, doctor's findings.
MARKS = {"ok": ("✓", "green"), "failed": ("✗", "bold red"), "problem": ("✗", "bold red"), "skipped": ("○", "dim"),
         "note": ("•", "yellow")}


def marked_table(title: str, rows: list[tuple[str, Text, Text | str]]) -> Table:
    """(state, name, detail) rows behind their state's mark: no header, no box."""
    table = Table(title=title, title_justify="left", show_header=False, box=None, padding=(0, 1))
    for state, name, detail in rows:
        mark, style = MARKS[state]
        table.add_row(Text(mark, style=style), name, detail)
    return table


def dev_check_view(puzzle_id: str, checks: list) -> Table:
    return marked_table(puzzle_id, [(c.status, Text(c.name, style=MARKS[c.status][1] if c.status != "ok" else ""),
                                     c.detail) for c in checks])


def doctor_view(report: Report) -> Group:
    from tutor.doctor import puzzle_state

    def row(f) -> tuple[str, Text, Text]:
        # Text, not markup: details hold brackets ('.[gpu]') that markup would eat.
        detail = Text(f.detail)
        if f.fix:
            detail.append(f"\n{f.fix}", style="dim" if f.state == "ok" else MARKS[f.state][1].replace("bold ", ""))
        return f.state, Text(f.area, style="bold"), detail

    verdict = (Text("Every puzzle this machine can run is ready.", style="green") if report.ok else
               Text("Something above stops a puzzle this machine could run: its fix is under it.", style="bold red"))
    return Group(marked_table("This machine", [row(f) for f in report.findings]), Text(""),
                 marked_table("Puzzles", [row(puzzle_state(c)) for c in report.puzzles]), Text(""), verdict)
