"""A profile's numbers: headline figures, the trace or report and how to open it, every metric with its meaning."""

from __future__ import annotations

from pathlib import Path

from rich.text import Text
from textual.app import ComposeResult
from textual.containers import Vertical, VerticalScroll
from textual.content import Content
from textual.widgets import DataTable, Static

from tutor.formatting import in_workspace, metric_value, ratio
from tutor.metrics import describe
from tutor.profilers.registry import PROFILERS, opener_for, profiler_name
from tutor.records import HEADLINE, KEY_FIGURES, ProfileRecord, compare_rows

MUTED = "$foreground-muted"


def how_to_open(record: ProfileRecord) -> tuple[str, str, str]:
    """Where to open a profile's file: (in a GUI, from a shell, the command)."""
    opener = opener_for(record.profiler, record.recorded)
    return opener.gui, opener.shell, opener.command(record.trace_path)


def profile_title(record: ProfileRecord, which: str) -> Content:
    """`baseline profile · torch profiler · cuda`: whose profile, by which profiler, of which device."""
    return Content.assemble((f"{which} profile", "bold"),
                            (f" · {record.profiler} profiler · {record.metrics.device}", MUTED),
                            (" · a recording (study mode), not your run", "$text-accent") if record.recorded
                            else "")


def how_to_profile(which: str, profiler: str) -> str:
    if profiler == "torch":
        return {"baseline": "p on the puzzle profiles the baseline", "mine": "P on the puzzle profiles yours"}[which]
    return f"on the puzzle, ctrl+p → Profile {'the baseline' if which == 'baseline' else 'mine'} with {profiler}"


def no_profile(which: str, profiler: str) -> Content:
    """What to do when there is no `which` profile by `profiler` to show."""
    return Content.assemble((f"No {which} profile by {profiler_name(profiler)} yet: ", "bold"),
                            how_to_profile(which, profiler), ".")


def headline(record: ProfileRecord) -> Content:
    """Busy or idle, launches, memory (the host's side of a CPU run; what a kernel profiler says of the top kernel)."""
    values, labels = record.metrics.values, dict(KEY_FIGURES)
    profiler = PROFILERS.get(record.profiler, PROFILERS["torch"])
    names = profiler.headline or HEADLINE.get(record.metrics.device, HEADLINE["cpu"])
    parts = [Content.assemble((labels[name] + " ", MUTED), (metric_value(name, values[name]), "bold"))
             for name in names if name in values]
    if record.metrics.device == "cpu":
        parts.append(Content.styled("no GPU activity", MUTED))
    return Content.assemble((profiler.subject + ": ", MUTED), Content(" · ").join(parts))


class TraceView(VerticalScroll):
    """Where a profile's trace or report is, and the line that opens it in its profiler's viewer (wrapped, never cut)."""

    DEFAULT_CSS = """
    TraceView > Static { height: auto; }
    TraceView > .indent { padding-left: 2; }
    TraceView > .command { padding-left: 4; color: $text-accent; }
    TraceView > .heading { text-style: bold; margin-top: 1; }
    """

    def compose(self) -> ComposeResult:
        yield Static(id="trace-title")
        yield Static(id="trace-path", classes="indent")
        yield Static("Open it", classes="heading")
        yield Static(id="trace-gui", classes="indent")
        yield Static(id="trace-shell", classes="indent")
        yield Static(id="trace-command", classes="command")
        yield Static(id="trace-remote", classes="command")
        yield Static("What to look for", classes="heading")
        yield Static(id="trace-look-for", classes="indent")

    def show(self, record: ProfileRecord | None, which: str, root: Path, profiler: str) -> None:
        for child in self.children[1:]:
            child.display = record is not None
        title = self.query_one("#trace-title", Static)
        if record is None:
            title.update(no_profile(which, profiler))
            return
        opener = opener_for(record.profiler, record.recorded)
        title.update(Content.assemble((f"The {which} {opener.noun}", "bold"), (f" · {opener.file_kind}", MUTED)))
        missing = "  (deleted since)" if not record.trace_path.exists() else ""
        self.query_one("#trace-path", Static).update(
            Content.assemble(in_workspace(record.trace_path, root), (missing, "$text-error")))
        gui, shell, command = how_to_open(record)
        self.query_one("#trace-gui", Static).update(f"• {gui}")
        self.query_one("#trace-shell", Static).update(f"• from a shell, {shell} (y copies the line):")
        self.query_one("#trace-command", Static).update(command)
        self.query_one("#trace-remote", Static).update(Content.styled(opener.remote, MUTED))
        self.query_one("#trace-look-for", Static).update("\n".join(f"• {line}" for line in opener.look_for))


class ProfileView(Vertical):
    """One profile (baseline or mine): its headline, trace, and the metrics table."""

    DEFAULT_CSS = """
    ProfileView { height: 1fr; }
    ProfileView > .profile-head { height: auto; margin-bottom: 1; }
    ProfileView > DataTable { height: 1fr; scrollbar-size-horizontal: 1; }
    """

    def compose(self) -> ComposeResult:
        yield Static(classes="profile-head")
        table = DataTable(cursor_type="row", zebra_stripes=True)
        table.add_column("metric (cite this name)", key="metric")
        table.add_column("value", key="value")
        table.add_column("meaning", key="meaning")
        yield table

    def show(self, record: ProfileRecord | None, which: str, root: Path, profiler: str) -> None:
        head = self.query_one(".profile-head", Static)
        table = self.query_one(DataTable)
        table.clear()
        if record is None:
            head.update(no_profile(which, profiler))
            return
        noun = opener_for(record.profiler, record.recorded).noun
        head.update(Content("\n").join([
            profile_title(record, which),
            headline(record),
            Content.assemble((f"{noun} ", MUTED), in_workspace(record.trace_path, root),
                             ("  (6: how to open it)", MUTED)),
        ]))
        for name, value, _ in compare_rows(record.metrics, None):
            table.add_row(name, Text(metric_value(name, value), justify="right"), describe(name))


class CompareView(Vertical):
    """Baseline and mine side by side, with the factor between them."""

    DEFAULT_CSS = """
    CompareView { height: 1fr; }
    CompareView > Static { height: auto; margin-bottom: 1; }
    CompareView > DataTable { height: 1fr; scrollbar-size-horizontal: 1; }
    """

    def compose(self) -> ComposeResult:
        yield Static()
        table = DataTable(cursor_type="row", zebra_stripes=True)
        for label in ("metric", "baseline", "mine", "ratio"):
            table.add_column(label, key=label)
        yield table

    def show(self, baseline: ProfileRecord | None, mine: ProfileRecord | None, profiler: str) -> None:
        """The two newest profiles by one profiler (a torch trace and an ncu report share no metric)."""
        note = self.query_one(Static)
        table = self.query_one(DataTable)
        table.clear()
        missing = [w for w, r in (("baseline", baseline), ("mine", mine)) if r is None]
        if len(missing) == 2:
            note.update(Content.assemble((f"No profiles by {profiler_name(profiler)} yet: ", "bold"),
                                         how_to_profile("baseline", profiler), "; ",
                                         how_to_profile("mine", profiler), "."))
            return
        note.update(Content.styled(
            f"Profile {missing[0]} to fill the empty column ({how_to_profile(missing[0], profiler)})." if missing
            else "Latest baseline profile against your latest profile; per forward() unless the name says otherwise.",
            MUTED))
        for name, b, m in compare_rows(baseline.metrics if baseline else None, mine.metrics if mine else None):
            table.add_row(name, Text(metric_value(name, b), justify="right"),
                          Text(metric_value(name, m), justify="right"), Text(ratio(b, m), justify="right"))
