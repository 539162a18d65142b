"""Where the GPU time went: the kernel table (sortable) and a bar of time per kernel category."""

from __future__ import annotations

from rich.text import Text
from textual.app import ComposeResult
from textual.containers import Vertical
from textual.widgets import DataTable, Static

from tutor.app.records import ProfileRecord, category_shares

# column key -> (title, numeric); sorting a numeric column puts the largest first.
# Numbers first and the (long) kernel name last, so the numbers stay on screen at 80 columns.
COLUMNS = {"share": ("share", True), "total_us": ("total µs", True), "mean_us": ("mean µs", True),
           "count": ("count", True), "category": ("category", False), "name": ("kernel", False)}


class KernelTable(DataTable):
    """One row per kernel name; `sort_by(column)` or a click on a header re-sorts it."""

    def __init__(self, **kwargs) -> None:
        super().__init__(cursor_type="row", zebra_stripes=True, **kwargs)
        self.kernels: list[dict] = []
        self.sort_column = "total_us"

    def on_mount(self) -> None:
        for key, (title, _) in COLUMNS.items():
            self.add_column(title, key=key)

    def show(self, kernels: list[dict]) -> None:
        self.kernels = list(kernels)
        self._fill()

    def sort_by(self, column: str) -> None:
        self.sort_column = column
        self._fill()

    def next_sort(self) -> str:
        keys = list(COLUMNS)
        self.sort_by(keys[(keys.index(self.sort_column) + 1) % len(keys)])
        return COLUMNS[self.sort_column][0]

    def _fill(self) -> None:
        numeric = COLUMNS[self.sort_column][1]
        rows = sorted(self.kernels, key=lambda k: (-k[self.sort_column] if numeric else str(k[self.sort_column]),
                                                   k["name"]))
        self.clear()
        for k in rows:
            self.add_row(Text(f"{k['share']:.1%}", justify="right"), Text(f"{k['total_us']:.1f}", justify="right"),
                         Text(f"{k['mean_us']:.2f}", justify="right"), Text(str(k["count"]), justify="right"),
                         k["category"], k["name"])
        for key, (title, _) in COLUMNS.items():
            self.columns[key].label = Text(title + (" ▼" if key == self.sort_column else ""))
        self.refresh()

    def on_data_table_header_selected(self, event: DataTable.HeaderSelected) -> None:
        event.stop()
        self.sort_by(str(event.column_key.value))


class KernelBreakdown(Vertical):
    """Share of GPU time per category, as a horizontal bar chart (textual-plotext)."""

    DEFAULT_CSS = """
    KernelBreakdown { height: auto; }
    KernelBreakdown > PlotextPlot { height: 8; }
    """

    def compose(self) -> ComposeResult:
        from textual_plotext import PlotextPlot

        yield PlotextPlot()

    def show(self, shares: dict[str, float]) -> None:
        from textual_plotext import PlotextPlot

        plot = self.query_one(PlotextPlot)
        plot.styles.height = len(shares) + 4
        plt = plot.plt
        plt.clear_figure()
        # plotext draws the first bar at the bottom: reversed, the largest share is on top.
        names = [f"{name} {share:.0%}" for name, share in reversed(shares.items())]
        plt.bar(names, [round(100 * s, 1) for s in reversed(shares.values())], orientation="horizontal", width=0.3)
        plt.title("share of GPU time by category (%)")
        plt.xlim(0, 100)
        plot.refresh()


class KernelsView(Vertical):
    DEFAULT_CSS = """
    KernelsView { height: 1fr; }
    KernelsView > .kernels-head { height: auto; }
    KernelsView > KernelTable { height: 1fr; }
    """

    def compose(self) -> ComposeResult:
        yield Static(classes="kernels-head")
        yield KernelTable()
        yield KernelBreakdown()

    def show(self, record: ProfileRecord | None, which: str) -> None:
        head = self.query_one(".kernels-head", Static)
        table = self.query_one(KernelTable)
        breakdown = self.query_one(KernelBreakdown)
        kernels = record.metrics.kernels if record else []
        table.show(kernels)
        table.display = breakdown.display = bool(kernels)
        if record is None:
            head.update(f"No {which} profile yet: p on the puzzle profiles the baseline, P yours.")
        elif not kernels:
            head.update(f"The {which} profile ran on the {record.metrics.device.upper()}: it has no GPU kernels. "
                        "Its host-side numbers (time, aten ops, allocations per forward) are in Metrics.")
        else:
            head.update(f"{which} profile · {len(kernels)} kernels · s or a click on a header sorts · t switches")
            breakdown.show(category_shares(record.metrics))
