"""Where the GPU time went: the kernel table (sortable) and a bar of time per kernel category."""

from __future__ import annotations

import math

from rich.text import Text
from textual.app import ComposeResult
from textual.containers import Vertical
from textual.content import Content
from textual.widgets import DataTable, Static

from tutor.app.widgets.metrics import no_profile
from tutor.formatting import KERNEL_COLUMNS, KernelColumn, kernel_cell, kernel_columns
from tutor.records import ProfileRecord, time_breakdown

def _cell(value, column: KernelColumn) -> Text | str:
    text = kernel_cell(value, column)
    return Text(text, justify="right") if column.numeric else text


def _sort_key(kernel: dict, key: str, column: KernelColumn) -> tuple:
    value = kernel.get(key)
    missing = value is None or (isinstance(value, float) and math.isnan(value))
    return missing, 0 if missing else (-value if column.numeric else str(value)), kernel.get("name") or kernel.get("site", "")


class KernelTable(DataTable):
    """One row per kernel name, in the columns its profiler gives; `sort_by(column)` or a header click re-sorts."""

    def __init__(self, **kwargs) -> None:
        super().__init__(cursor_type="row", zebra_stripes=True, **kwargs)
        self.kernels: list[dict] = []
        self.sort_column = "total_us"

    @property
    def column_keys(self) -> list[str]:
        return [str(key.value) for key in self.columns]

    def show(self, kernels: list[dict]) -> None:
        self.kernels = list(kernels)
        keys = kernel_columns(self.kernels)
        if keys != self.column_keys:
            self.clear(columns=True)
            for key in keys:
                self.add_column(KERNEL_COLUMNS[key].title, key=key)
        if self.sort_column not in keys:  # kernels by their time, allocation sites by their bytes
            self.sort_column = next((k for k in ("total_us", "total_mb") if k in keys), keys[0])
        self._fill()

    def sort_by(self, column: str) -> None:
        self.sort_column = column
        self._fill()

    def next_sort(self) -> str:
        keys = self.column_keys
        self.sort_by(keys[(keys.index(self.sort_column) + 1) % len(keys)])
        return KERNEL_COLUMNS[self.sort_column].title

    def _fill(self) -> None:
        keys = self.column_keys
        sort = KERNEL_COLUMNS[self.sort_column]
        self.clear()
        for k in sorted(self.kernels, key=lambda k: _sort_key(k, self.sort_column, sort)):
            self.add_row(*(_cell(k.get(key), KERNEL_COLUMNS[key]) for key in keys))
        for key in keys:
            self.columns[key].label = Text(KERNEL_COLUMNS[key].title + (" ▼" if key == self.sort_column else ""))
        self.refresh()

    def on_data_table_header_selected(self, event: DataTable.HeaderSelected) -> None:
        event.stop()
        self.sort_by(str(event.column_key.value))


LABEL_WIDTH = 24  # of a bar's name: kernel names run long, and the bars need the width


class KernelBreakdown(Vertical):
    """Share of GPU time per category (or per kernel), as a horizontal bar chart (textual-plotext)."""

    DEFAULT_CSS = """
    KernelBreakdown { height: auto; }
    KernelBreakdown > PlotextPlot { height: 8; }
    """

    def compose(self) -> ComposeResult:
        from textual_plotext import PlotextPlot

        yield PlotextPlot()

    def show(self, title: str, shares: dict[str, float]) -> None:
        from textual_plotext import PlotextPlot

        plot = self.query_one(PlotextPlot)
        plot.styles.height = len(shares) + 4
        plt = plot.plt
        plt.clear_figure()
        # plotext draws the first bar at the bottom: reversed, the largest share is on top.
        names = [f"{name[:LABEL_WIDTH]} {share:.0%}" for name, share in reversed(shares.items())]
        plt.bar(names, [round(100 * s, 1) for s in reversed(shares.values())], orientation="horizontal", width=0.3)
        plt.title(title)
        plt.xlim(0, 100)
        plot.refresh()


class MemoryTimeline(Vertical):
    """The memory profiler's allocated and reserved MiB over the recorded events, a line where each phase begins."""

    DEFAULT_CSS = """
    MemoryTimeline { height: 12; }
    MemoryTimeline > PlotextPlot { height: 1fr; }
    """

    def compose(self) -> ComposeResult:
        from textual_plotext import PlotextPlot

        yield PlotextPlot()

    def show(self, series: dict) -> None:
        from textual_plotext import PlotextPlot

        plot = self.query_one(PlotextPlot)
        plt = plot.plt
        plt.clear_figure()
        allocated, reserved = series.get("allocated_mb", []), series.get("reserved_mb", [])
        x = list(range(len(allocated)))
        plt.plot(x, reserved, marker="braille", label="reserved")
        plt.plot(x, allocated, marker="braille", label="allocated")
        for phase, start in series.get("phase_starts", {}).items():
            plt.vline(start)
            plt.text(phase, start, max(reserved, default=0))
        plt.title("MiB over the allocator's events (prepare, warm-up, the profiled calls)")
        plt.xticks([])
        plot.refresh()


class KernelsView(Vertical):
    DEFAULT_CSS = """
    KernelsView { height: 1fr; }
    KernelsView > .kernels-head { height: auto; }
    KernelsView > KernelTable { height: 1fr; }
    """

    def compose(self) -> ComposeResult:
        yield Static(classes="kernels-head")
        yield MemoryTimeline()
        yield KernelTable()
        yield KernelBreakdown()

    def show(self, record: ProfileRecord | None, which: str, profiler: str) -> None:
        head = self.query_one(".kernels-head", Static)
        table = self.query_one(KernelTable)
        breakdown = self.query_one(KernelBreakdown)
        kernels = record.metrics.kernels if record else []
        series = record.metrics.series if record else {}
        timeline = self.query_one(MemoryTimeline)
        table.show(kernels)
        table.display = bool(kernels)
        on_cpu = record is not None and record.metrics.device == "cpu"
        breakdown.display = bool(kernels) and not series and not on_cpu
        timeline.display = bool(series)
        if series:  # the memory profiler: its timeline, then the sites that allocated the most
            timeline.show(series)
            head.update(Content.assemble((f"{which} profile", "bold"), f" · memory · {len(kernels)} allocation sites",
                                         (" · the most bytes first; s sorts", "$foreground-muted")))
            return
        if record is None:
            head.update(no_profile(which, profiler))
        elif not kernels:
            head.update(f"The {which} profile ran on the {record.metrics.device.upper()}: it has no GPU kernels. "
                        "Its host-side numbers (time, aten ops, allocations per forward) are in Metrics.")
        elif on_cpu:  # the PyTorch profiler's CPU view: operators by their own time
            head.update(Content.assemble((f"{which} profile", "bold"), f" · CPU · {len(kernels)} aten operators",
                                         (" · by self time (what each spent outside the operators it called); s sorts",
                                          "$foreground-muted")))
        else:
            head.update(Content.assemble((f"{which} profile", "bold"),
                                         f" · {record.profiler} · {len(kernels)} kernels",
                                         (" · s or a click on a header sorts", "$foreground-muted")))
            breakdown.show(*time_breakdown(record.metrics))
