"""A profile's numbers: headline figures, the trace and how to open it, every metric with its meaning."""

from __future__ import annotations

from pathlib import Path

from rich.text import Text
from textual.app import ComposeResult
from textual.containers import Vertical, VerticalScroll
from textual.content import Content
from textual.widgets import DataTable, Static

from tutor.app.formatting import in_workspace, metric_value, ratio, short_path
from tutor.app.records import HEADLINE, KEY_FIGURES, ProfileRecord, compare_rows, perfetto_command
from tutor.metrics import describe

MUTED = "$foreground-muted"


def headline(record: ProfileRecord) -> Content:
    """Busy or idle, launches, memory (or the host's side of a CPU run), per forward() unless said."""
    values, labels = record.metrics.values, dict(KEY_FIGURES)
    names = HEADLINE.get(record.metrics.device, HEADLINE["cpu"])
    parts = [Content.assemble((labels[name] + " ", MUTED), (metric_value(name, values[name]), "bold"))
             for name in names if name in values]
    if record.metrics.device == "cpu":
        parts.append(Content.styled("no GPU activity", MUTED))
    return Content.assemble(("per forward(): ", MUTED), Content(" · ").join(parts))


class TraceView(VerticalScroll):
    """Where a profile's trace is and the one line that opens it in Perfetto (wrapped, never cut)."""

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
        yield Static(Content.assemble("• in a browser: ", ("https://ui.perfetto.dev", "underline"),
                                      " → Open trace file"), classes="indent")
        yield Static("• from a shell, with Perfetto's own script (y copies the line):", classes="indent")
        yield Static(id="trace-command", classes="command")
        yield Static(Content.styled("on a remote machine add -n and forward the port: ssh -L 9001:127.0.0.1:9001 HOST",
                                    MUTED), classes="command")
        yield Static("What to look for", classes="heading")
        yield Static("• each forward() sits in an infprof:iter range: the metrics count only what is inside them",
                     classes="indent")
        yield Static("• gaps between kernels on the GPU rows are idle time; the host rows above them say why",
                     classes="indent")

    def show(self, record: ProfileRecord | None, which: str, root: Path) -> None:
        for child in self.children[1:]:
            child.display = record is not None
        title = self.query_one("#trace-title", Static)
        if record is None:
            title.update(f"No {which} profile yet, so no trace: p on the puzzle profiles the baseline, P yours.")
            return
        title.update(Content.assemble((f"The {which} trace", "bold"),
                                      (f" · {record.metrics.profiler} profiler, Chrome JSON · t switches", MUTED)))
        missing = "  (deleted since)" if not record.trace_path.exists() else ""
        self.query_one("#trace-path", Static).update(
            Content.assemble(in_workspace(record.trace_path, root), (missing, "$text-error")))
        self.query_one("#trace-command", Static).update(perfetto_command(Path(short_path(record.trace_path))))


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

    def show(self, record: ProfileRecord | None, which: str, root: Path) -> None:
        head = self.query_one(".profile-head", Static)
        table = self.query_one(DataTable)
        table.clear()
        if record is None:
            head.update(Content.assemble((f"No {which} profile yet. ", "bold"),
                                         "On the puzzle, p profiles the baseline and P profiles yours."))
            return
        head.update(Content("\n").join([
            Content.assemble((f"{which} profile", "bold"), (f" · {record.metrics.profiler} profiler · "
                                                            f"{record.metrics.device} · t switches", MUTED)),
            headline(record),
            Content.assemble(("trace ", MUTED), in_workspace(record.trace_path, root), ("  (6: how to open it)", MUTED)),
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

    def show(self, baseline: ProfileRecord | None, mine: ProfileRecord | None) -> None:
        note = self.query_one(Static)
        table = self.query_one(DataTable)
        table.clear()
        missing = [w for w, r in (("baseline", baseline), ("mine", mine)) if r is None]
        if len(missing) == 2:
            note.update("No profiles yet: on the puzzle, p profiles the baseline and P profiles yours.")
            return
        note.update(Content.styled(
            f"Profile {' and '.join(missing)} to fill the empty column (P on the puzzle profiles yours)." if missing
            else "Latest baseline profile against your latest profile; per forward() unless the name says otherwise.",
            MUTED))
        for name, b, m in compare_rows(baseline.metrics if baseline else None, mine.metrics if mine else None):
            table.add_row(name, Text(metric_value(name, b), justify="right"),
                          Text(metric_value(name, m), justify="right"), Text(ratio(b, m), justify="right"))
