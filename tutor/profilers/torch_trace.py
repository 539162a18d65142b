"""Read a PyTorch-profiler Chrome trace into the shared metrics model.

The trace is the one `profile_iterations()` records: every forward() sits in an
`infprof:iter` range, and only work inside those ranges counts. Host events
count when their start falls inside a range; GPU work (kernels, memcpys,
memsets) counts when the CUDA runtime/driver call that launched it, found
through the shared `correlation` id, does. "GPU time" in category shares and
the kernel table is kernels plus memcpys and memsets (categories "memcpy" and
"memset"); `gpu.time_per_iter_us` and `kernels.per_iter` count kernels only.
The JSON is decoded straight into slim structs holding only the fields read,
then everything is vectorised pandas: a 1M-event trace takes about 2.5 s on a
2-core machine (benchmarks/trace_analysis.py).
"""

from __future__ import annotations

import gzip
from pathlib import Path

import msgspec
import numpy as np
import pandas as pd

from tutor.metrics import ProfileMetrics
from tutor.profilers.gpu_timeline import (API_SUFFIX, EVENT_CATEGORY, gpu_metrics, iteration_of, kernel_category,
                                          kernel_table)
from tutor.protocol import TORCH_ITER_RANGE as ITER_RANGE

GPU_EVENT_CATS = ("kernel", "gpu_memcpy", "gpu_memset")
LAUNCHER_CATS = ("cuda_runtime", "cuda_driver")


class _Args(msgspec.Struct, gc=False):
    """The `args` keys the metrics read; the decoder skips every other key without building it."""
    correlation: int | float | str | None = None
    bytes: int | float | str | None = None  # a memcpy's size
    Bytes: int | float | str | None = None  # a [memory] event's allocation (negative: a free)
    # An NCCL kernel's message, as torch's c10d records it (torch 2.x): what moved, of what type, among how many.
    collective: str | None = msgspec.field(default=None, name="Collective name")
    in_nelems: int | float | str | None = msgspec.field(default=None, name="In msg nelems")
    dtype: str | None = None
    group_size: int | float | str | None = msgspec.field(default=None, name="Group size")


class _Event(msgspec.Struct, gc=False):
    """The fields of one trace event the metrics read (numbers may come as strings; they are coerced later)."""
    cat: str | None = None
    name: str | None = None
    tid: int | float | str | None = None
    ts: float | str | None = None
    dur: float | str | None = None
    args: _Args | None = None


class _Trace(msgspec.Struct, gc=False):
    traceEvents: list[_Event] = []


# Structs instead of a dict per event, untracked by the cyclic GC: on a 1M-event H100
# trace this decodes in 0.6 s and 0.36 GB, where json.loads takes 2.5 s (5.7 s unless the
# GC is paused) and 1.06 GB.
_TRACE_DECODER = msgspec.json.Decoder(_Trace | list[_Event])  # a trace may also be a bare event list
_NO_ARGS = _Args()


# What the harness reports about memory beside the trace (tutor/harness/memory_facts.py), as metrics.
MEMORY_METRICS = {
    "peak_allocated_mb": "memory.peak_allocated_mb",
    "peak_reserved_mb": "memory.peak_reserved_mb",
    "reserved_mb": "memory.reserved_mb",
    "graph_pool_mb": "memory.graph_pool_mb",
    "graph_pools": "memory.graph_pools",
    "graphs_captured": "graphs.captured",
    "compiled_graphs": "compile.graphs",
    "graph_breaks": "compile.graph_breaks",
    "recompiles": "compile.recompiles",
    "recompile_limit_hits": "compile.recompile_limit_hits",
    "cudagraph_skips": "compile.cudagraph_skips",
}


def extract(trace_path: Path, memory: dict | None = None) -> ProfileMetrics:
    """Metrics of the `infprof:iter` window of one trace; `memory` is what profile_iterations returned."""
    events = _load_events(Path(trace_path))
    starts, ends = _iter_ranges(events, Path(trace_path))
    iterations = len(starts)
    values: dict[str, float] = {"iterations": float(iterations)}
    ops = _aten_ops(events, starts, ends)
    values.update(_cpu_metrics(events, ops, starts, ends))

    if (events["cat"] == "kernel").any():  # a CPU-only run records no device activity at all
        device = "cuda"
        runtime = _runtime_calls(events, starts, ends)
        gpu = _gpu_work(events, runtime)
        overhead = _of_cat(events, "overhead")
        values.update(gpu_metrics(gpu, runtime, overhead, starts, ends))
        kernels = kernel_table(gpu)
    else:  # the operators take the kernels' place: a GPU trace's (up to 1M events) never pays for their table
        device, kernels = "cpu", operator_table(ops, iterations)
    for key, metric in MEMORY_METRICS.items():
        if memory and memory.get(key) is not None:
            values[metric] = float(memory[key])
    return ProfileMetrics(values=values, kernels=kernels, profiler="torch", device=device)


def _load_events(path: Path) -> pd.DataFrame:
    opener = gzip.open if path.suffix == ".gz" else open
    try:
        with opener(path, "rb") as f:
            raw = f.read()
        trace = _TRACE_DECODER.decode(raw)
    except (OSError, EOFError, ValueError) as exc:  # msgspec's decode and schema errors are ValueErrors
        raise ValueError(f"Cannot read the trace {path}: {exc}. Profile again to record a fresh one.") from exc
    del raw
    return _event_table(trace.traceEvents if isinstance(trace, _Trace) else trace)


def _event_table(records: list[_Event]) -> pd.DataFrame:
    """One row per event, the `args` keys the metrics read as columns of their own."""
    args = [_NO_ARGS if e.args is None else e.args for e in records]
    return pd.DataFrame({
        # A handful of distinct categories: comparisons on codes, not on a million strings.
        "cat": _categorical([e.cat for e in records]),
        # Plain objects: pandas' string-dtype inference costs 0.2 s per 1M rows and buys nothing here.
        "name": pd.Series([e.name for e in records], dtype=object),
        "tid": pd.Series([e.tid for e in records], dtype=object),
        "ts": _numbers([e.ts for e in records]),
        "dur": np.nan_to_num(_numbers([e.dur for e in records]), nan=0.0),
        "correlation": _numbers([a.correlation for a in args]),
        "bytes": _numbers([a.bytes for a in args]),
        "Bytes": _numbers([a.Bytes for a in args]),
        **_message_columns(args),
    })


def _message_columns(args: list[_Args]) -> dict[str, np.ndarray]:
    """The NCCL messages' columns: only collectives' kernels carry them, so only their rows are read (a pass
    over every event per column cost a third more time on a 1M-event trace)."""
    rows = [i for i, a in enumerate(args) if a.collective is not None]
    columns = {"collective": np.full(len(args), None, dtype=object), "dtype": np.full(len(args), None, dtype=object),
               "in_nelems": np.full(len(args), np.nan), "group_size": np.full(len(args), np.nan)}
    if rows:
        columns["collective"][rows] = [args[i].collective for i in rows]
        columns["dtype"][rows] = [args[i].dtype for i in rows]
        columns["in_nelems"][rows] = _numbers([args[i].in_nelems for i in rows])
        columns["group_size"][rows] = _numbers([args[i].group_size for i in rows])
    return columns


def _categorical(values: list) -> pd.Categorical:
    """pd.Categorical(values) for a column of few distinct values: a dict lookup per row is 5x faster."""
    index: dict = {None: -1}
    codes = np.array([index.setdefault(v, len(index) - 1) for v in values], dtype=np.int32)
    return pd.Categorical.from_codes(codes, categories=list(index)[1:])


def _numbers(values: list) -> np.ndarray:
    """Floats, NaN where a value is missing or not a number."""
    try:
        return np.array(values, dtype=float)  # None becomes NaN; the common case, and 10x faster
    except (TypeError, ValueError):
        return pd.to_numeric(pd.Series(values, dtype=object), errors="coerce").to_numpy(float)


def _of_cat(events: pd.DataFrame, *cats: str) -> pd.DataFrame:
    return events[events["cat"].isin(cats)]


def _iter_ranges(events: pd.DataFrame, path: Path) -> tuple[np.ndarray, np.ndarray]:
    ranges = _of_cat(events, "user_annotation")
    ranges = ranges[ranges["name"] == ITER_RANGE].sort_values("ts")
    if ranges.empty:
        raise ValueError(
            f"The trace {path} has no '{ITER_RANGE}' ranges, so there is no measured window: it was not "
            "recorded by profile_iterations(), or the workload failed before its first iteration ended.")
    starts = ranges["ts"].to_numpy(float)
    return starts, starts + ranges["dur"].to_numpy(float)


def _aten_ops(events: pd.DataFrame, starts: np.ndarray, ends: np.ndarray) -> pd.DataFrame:
    """The aten operators that ran inside the measured window."""
    ops = _of_cat(events, "cpu_op")
    ops = ops[ops["name"].isin([n for n in ops["name"].unique() if str(n).startswith("aten::")])]
    return ops[iteration_of(ops["ts"], starts, ends) >= 0]


def _cpu_metrics(events: pd.DataFrame, ops: pd.DataFrame, starts: np.ndarray, ends: np.ndarray) -> dict[str, float]:
    iterations = len(starts)
    allocs = _of_cat(events, "cpu_instant_event")
    allocs = allocs[allocs["name"] == "[memory]"]
    allocs = allocs[iteration_of(allocs["ts"], starts, ends) >= 0]
    return {
        "cpu.time_per_iter_us": float(np.median(ends - starts)),
        # Only calls made by the workload itself: an aten op that another aten op
        # calls (aten::linear -> aten::addmm) is one dispatcher round-trip, not two.
        "cpu.ops_per_iter": float(_top_level(ops).sum()) / iterations,
        "cpu.allocs_per_iter": float((allocs["Bytes"] > 0).sum()) / iterations,
    }


def operator_table(ops: pd.DataFrame, iterations: int, top: int = 30) -> list[dict]:
    """A CPU run's table in place of kernels: each aten operator (`ops`, _aten_ops') by its self time (its time less
    the operators it called) per forward(), its calls and its share of the operators' self time, the dearest first:
    the PyTorch profiler's CPU view, which a CPU puzzle's story sends the learner to."""
    if ops.empty:
        return []
    ordered = ops.assign(neg_dur=-ops["dur"]).sort_values(["tid", "ts", "neg_dur"], kind="stable")
    self_us = ordered["dur"].to_numpy(float).copy()
    open_ops: list[tuple[float, int]] = []  # (end, row) of the operators enclosing the current one, on one thread
    last_tid = None
    for row, (tid, ts, dur) in enumerate(zip(ordered["tid"], ordered["ts"].to_numpy(float),
                                             ordered["dur"].to_numpy(float))):
        if tid != last_tid:
            open_ops, last_tid = [], tid
        while open_ops and open_ops[-1][0] <= ts + 1e-3:  # rounded to the nanosecond, as _top_level allows
            open_ops.pop()
        if open_ops:
            self_us[open_ops[-1][1]] -= dur  # the direct caller's own time excludes this call
        open_ops.append((ts + dur, row))
    table = pd.DataFrame({"name": ordered["name"].to_numpy(), "self": self_us})
    by_name = table.groupby("name", sort=False)["self"].agg(["sum", "count"]).sort_values("sum", ascending=False)
    whole = float(by_name["sum"].sum()) or 1.0
    return [{"name": str(name), "share": float(row["sum"]) / whole, "total_us": float(row["sum"]) / iterations,
             "count": float(row["count"]) / iterations, "mean_us": float(row["sum"]) / float(row["count"])}
            for name, row in by_name.head(top).iterrows()]


def _top_level(ops: pd.DataFrame) -> np.ndarray:
    """Whether each op is outside every other op in `ops` on its thread."""
    if ops.empty:
        return np.zeros(0, dtype=bool)
    # A parent sorts before the children that start with it (longer first).
    ordered = ops.assign(end=ops["ts"] + ops["dur"], neg_dur=-ops["dur"]).sort_values(
        ["tid", "ts", "neg_dur"], kind="stable")
    furthest = ordered.groupby("tid", sort=False)["end"].cummax()
    before = furthest.groupby(ordered["tid"], sort=False).shift(1)
    # Timestamps are rounded to the nanosecond: a sibling may start 1 ns "before" its predecessor ends.
    return (before.isna() | (before <= ordered["ts"] + 1e-3)).to_numpy()


def _runtime_calls(events: pd.DataFrame, starts: np.ndarray, ends: np.ndarray) -> pd.DataFrame:
    calls = _of_cat(events, *LAUNCHER_CATS)
    calls = calls.assign(api=calls["name"].map({n: API_SUFFIX.sub("", n) for n in calls["name"].unique()}),
                         iteration=iteration_of(calls["ts"], starts, ends))
    return calls[["api", "ts", "dur", "correlation", "iteration"]]


def _gpu_work(events: pd.DataFrame, runtime: pd.DataFrame) -> pd.DataFrame:
    """GPU events launched inside the window, with their launch time and category."""
    work = _of_cat(events, *GPU_EVENT_CATS)
    work = work[["name", "ts", "dur", "correlation", "bytes"]].assign(cat=work["cat"].astype(str),
                                                                      **collective_bytes(work))
    launches = (runtime[runtime["iteration"] >= 0].dropna(subset=["correlation"])
                .drop_duplicates("correlation")[["correlation", "ts", "iteration"]]
                .rename(columns={"ts": "launch_ts"}))
    work = work.merge(launches, on="correlation", how="inner")
    kernel_names = work.loc[work["cat"] == "kernel", "name"].unique()
    categories = {name: kernel_category(name) for name in kernel_names}
    return work.assign(category=work["cat"].map(EVENT_CATEGORY).fillna(work["name"].map(categories)))


# Bytes an element of each dtype c10d names (torch's ScalarType names).
DTYPE_BYTES = {"Double": 8, "Long": 8, "Float": 4, "Int": 4, "BFloat16": 2, "Half": 2, "Short": 2,
               "Float8_e4m3fn": 1, "Float8_e5m2": 1, "Byte": 1, "Char": 1, "Bool": 1}


def bus_factor(collective: str, world: float) -> float:
    """Bytes each GPU's link carries per byte of a collective's input message: NCCL's bus-bandwidth convention
    (nccl-tests' PERFORMANCE.md), so a collective's rate reads against the link's whatever the ranks."""
    name = str(collective).lower().replace("_", "")
    if "allreduce" in name:
        return 2 * (world - 1) / world
    if "allgather" in name:  # the input is one rank's share of the gathered whole
        return world - 1
    if "reducescatter" in name or "alltoall" in name:
        return (world - 1) / world
    return 1.0  # broadcast, reduce, send, recv: the message crosses once


def collective_bytes(work: pd.DataFrame) -> dict[str, pd.Series]:
    """Each event's message bytes and bus bytes, where it is a collective torch recorded the message of."""
    message, bus = pd.Series(np.nan, index=work.index), pd.Series(np.nan, index=work.index)
    named = work[work["collective"].notna() & (work["group_size"] >= 1)]
    for (collective, world), rows in named.groupby(["collective", "group_size"]).groups.items():
        sent = named.loc[rows, "in_nelems"] * named.loc[rows, "dtype"].map(DTYPE_BYTES).astype(float)
        message.loc[rows], bus.loc[rows] = sent, sent * bus_factor(collective, world)
    return {"message_bytes": message, "bus_bytes": bus}
