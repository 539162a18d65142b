"""How numbers read on screen: units from the metric's name, short paths, speedups."""

from __future__ import annotations

import math
import re
from dataclasses import dataclass
from pathlib import Path

_MICROSECONDS = re.compile(r"(^|[._])us(_|$)")  # time_per_iter_us, category.gemm.us_per_iter


def duration_us(us: float) -> str:
    if us >= 1e6:
        return f"{us / 1e6:.3g} s"
    if us >= 1e3:
        return f"{us / 1e3:.3g} ms"
    return f"{us:.3g} µs"


def metric_value(name: str, value: float | None) -> str:
    """A metric in its unit, read from the name (`_us`, `_mb`, `_mb_per_`, `_pct`, `share`, `fraction`, `bytes`)."""
    if value is None or math.isnan(value):  # Nsight Compute leaves a counter it could not read empty
        return "—"
    if name.endswith(("share", "fraction")):
        # A sliver keeps its digits: 0.02% of a link's peak is not 0.0%.
        return f"{value:.1%}" if value == 0 or abs(value) >= 1e-3 else f"{value * 100:.2g}%"
    if name.endswith("_pct"):
        return f"{value:.3g}%"
    if _MICROSECONDS.search(name):
        return duration_us(value)
    if name.endswith("_mb") or "_mb_per_" in name:
        return f"{value / 1024:.2f} GiB" if value >= 1024 else f"{value:.1f} MiB"
    if "bytes" in name:
        for unit, size in (("GB", 1e9), ("MB", 1e6), ("kB", 1e3)):
            if value >= size:
                return f"{value / size:.3g} {unit}"
        return f"{value:.0f} B"
    if name.endswith("gbps"):
        return f"{value / 1e3:.3g} TB/s" if value >= 1e3 else f"{value:.3g} GB/s"
    return f"{value:.0f}" if value == int(value) and abs(value) < 1e7 else f"{value:.4g}"


def ratio(baseline: float | None, mine: float | None) -> str:
    """How mine compares with the baseline, as a factor."""
    if baseline is None or mine is None:
        return ""
    if baseline == 0:
        return "" if mine == 0 else "new"
    return f"×{mine / baseline:.3g}"


def speedup(value: float | None) -> str:
    return "—" if value is None else f"{value:.2f}x"


def in_workspace(path: Path | str, root: Path) -> str:
    """A path inside the workspace relative to its root (shorter, and what a learner sees in their editor)."""
    try:
        return str(Path(path).relative_to(root))
    except ValueError:
        return short_path(path)


def short_path(path: Path | str) -> str:
    """A path with the home folder written as ~ (and so the same in every test run under a fixed HOME)."""
    path = Path(path)
    try:
        return "~/" + str(path.relative_to(Path.home()))
    except ValueError:
        return str(path)


@dataclass(frozen=True)
class KernelColumn:
    title: str
    numeric: bool = True  # sorted largest first; text columns sort A to Z
    fmt: str = "{:.1f}"


# Every column a profiler's kernel rows may have; a table (the TUI's, the CLI's) shows those its rows
# have. Numbers first and the (long) kernel name last, so the numbers stay on screen at 80 columns.
KERNEL_COLUMNS = {
    "share": KernelColumn("share", fmt="{:.1%}"), "total_us": KernelColumn("total µs"),
    "mean_us": KernelColumn("mean µs", fmt="{:.2f}"), "count": KernelColumn("count", fmt="{:.0f}"),
    "sm_throughput_pct": KernelColumn("SM %", fmt="{:.0f}"), "memory_throughput_pct": KernelColumn("mem %", fmt="{:.0f}"),
    "achieved_occupancy_pct": KernelColumn("occup %", fmt="{:.0f}"),
    "registers_per_thread": KernelColumn("regs", fmt="{:.0f}"), "spill_instructions": KernelColumn("spill inst", fmt="{:.0f}"),
    "category": KernelColumn("category", numeric=False),
    # The memory profiler's rows are allocation sites (tutor.profilers.memory_snapshot), not kernels.
    "total_mb": KernelColumn("MiB"), "largest_mb": KernelColumn("largest MiB"),
    "phase": KernelColumn("phase", numeric=False),
    "name": KernelColumn("kernel", numeric=False), "site": KernelColumn("allocated at", numeric=False),
}


def label_column(kernels: list[dict]) -> str:
    """What names a row: a kernel's (or operator's) name, or an allocation's site."""
    return "site" if any("site" in k for k in kernels) else "name"


def kernel_columns(kernels: list[dict]) -> list[str]:
    """The columns these rows have (a kernel's name, or an allocation's site), in KERNEL_COLUMNS' order."""
    label = label_column(kernels)
    return [key for key in KERNEL_COLUMNS if key == label or (key not in ("name", "site") and any(key in k for k in kernels))]


def kernel_cell(value, column: KernelColumn) -> str:
    if not column.numeric:
        return "—" if value is None else str(value)
    missing = value is None or (isinstance(value, float) and math.isnan(value))
    return "—" if missing else column.fmt.format(value)
