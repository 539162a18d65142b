"""How numbers read on screen: units from the metric's name, short paths, speedups."""

from __future__ import annotations

import math
import re
from pathlib import Path

_MICROSECONDS = re.compile(r"(^|[._])us(_|$)")  # time_per_iter_us, category.gemm.us_per_iter


def duration_us(us: float) -> str:
    if us >= 1e6:
        return f"{us / 1e6:.3g} s"
    if us >= 1e3:
        return f"{us / 1e3:.3g} ms"
    return f"{us:.3g} µs"


def metric_value(name: str, value: float | None) -> str:
    """A metric in its unit, read from the name (`_us`, `_mb`, `_pct`, `share`, `fraction`, `bytes`)."""
    if value is None or math.isnan(value):  # Nsight Compute leaves a counter it could not read empty
        return "—"
    if name.endswith(("share", "fraction")):
        return f"{value:.1%}"
    if name.endswith("_pct"):
        return f"{value:.3g}%"
    if _MICROSECONDS.search(name):
        return duration_us(value)
    if name.endswith("_mb"):
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
