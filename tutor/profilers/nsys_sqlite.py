"""Read an Nsight Systems SQLite export (`nsys export --type sqlite`) into the shared metrics model.

The metric names and their meaning are the PyTorch-trace extractor's: its own code
computes them (gpu_timeline.gpu_metrics), only the reading differs. The window is the
NVTX ranges named `nvtx_range`, one per forward(), so iterations = matching ranges; GPU
work counts when the CUDA API call that launched it, joined by process and
correlationId, started inside one. With no matching range the whole capture is the
window, as one iteration, and `window.whole_capture` is 1.

Exports differ between nsys versions, and a "lazy" export leaves out tables it has no
rows for: a missing table is none of that thing, and columns are checked before they
are read. Quirks met in the real exports of tests/fixtures/nsys_exports.md:
- nsys 2022 stores each traced runtime call twice, once more as a "CUDA backtrace"
  event (eventClass 67) under the unversioned name: those rows are dropped.
- correlationIds restart in every process: launches are joined on (process, id).
- nsys demangles anonymous namespaces as `<unnamed>::`, PyTorch's traces as
  `(anonymous namespace)::`: names take PyTorch's spelling, so both profilers' kernel
  tables and categories agree.
- nsys 2025.1 types a cudaStreamSynchronize as a "stream wait" in
  CUPTI_ACTIVITY_KIND_SYNCHRONIZATION: host syncs are told by the API that made them.
"""

from __future__ import annotations

import re
import sqlite3
from pathlib import Path

import numpy as np
import pandas as pd

from tutor.errors import TutorError
from tutor.metrics import ProfileMetrics
from tutor.profilers.gpu_timeline import (API_SUFFIX, EVENT_CATEGORY, SYNC_APIS, gpu_metrics, iteration_of,
                                          kernel_category, kernel_table)
from tutor.protocol import NVTX_ITER_RANGE

# Metric names this backend adds to tutor.metrics.METRIC_DOCS.
METRIC_DOCS = {
    "window.whole_capture": "1 when no NVTX range matched, so the whole capture counts as one iteration",
    "graphs.kernels_per_iter": "kernels per forward() that ran as nodes of a CUDA graph",
}

_RANGE_TYPES = (59, 60, 70, 71)  # NvtxPushPopRange, NvtxStartEndRange and their NVTXT twins
_BACKTRACE_CLASS = 67  # TRACE_PROCESS_EVENT_CUDABACKTRACE, the same id in nsys 2022.2 to 2025.1
_WAIT_APIS = frozenset({"cudaStreamWaitEvent", "cuStreamWaitEvent"})  # a stream waits, not the host
# ENUM_CUDA_MEMCPY_OPER and ENUM_CUDA_MEM_KIND as nsys 2024-2025 write them; nsys 2022 leaves the tables out.
_COPY_KINDS = {0: "Unknown", 1: "HtoD", 2: "DtoH", 3: "HtoA", 4: "AtoH", 5: "AtoA", 6: "AtoD", 7: "DtoA",
               8: "DtoD", 9: "HtoH", 10: "PtoP", 11: "UVM HtoD", 12: "UVM DtoH", 13: "UVM DtoD"}
_MEMORY_KINDS = {0: "Pageable", 1: "Pinned", 2: "Device", 3: "Array", 4: "Managed", 5: "Device Static",
                 6: "Managed Static", 7: "Unknown"}
_EXPORT = "Export the report with `nsys export --type sqlite --output profile.sqlite profile.nsys-rep`."
_GPU_COLUMNS = ("cat", "name", "ts", "dur", "correlation", "bytes", "pid", "graph_node")


def extract(sqlite_path: Path, nvtx_range: str | None = NVTX_ITER_RANGE) -> ProfileMetrics:
    """Metrics of the `nvtx_range` ranges of one export (None: of the whole capture)."""
    with _Export(Path(sqlite_path)) as export:
        runtime = _runtime_calls(export)
        gpu = _gpu_activity(export)
        ranges = _ranges(export, nvtx_range)
        synced = _synchronized(export)
        overhead = _timed(export.read("PROFILER_OVERHEAD", pid_of="globalTid"))
    whole = ranges.empty
    if whole:
        starts, ends = _whole_capture(runtime, gpu)
    else:
        starts, ends = _outermost(ranges)
        pids = set(ranges["pid"])
        if -1 not in pids:  # a compile worker's calls in the same instants are not the workload's
            runtime, overhead = runtime[runtime["pid"].isin(pids)], overhead[overhead["pid"].isin(pids)]
    iterations = len(starts)
    runtime = runtime.assign(iteration=iteration_of(runtime["ts"], starts, ends))
    gpu = _launched_in_window(gpu, runtime)

    values = {"iterations": float(iterations), "window.whole_capture": float(whole)}
    if not whole:
        values["cpu.time_per_iter_us"] = float(np.median(ends - starts))
    values.update(gpu_metrics(gpu, runtime, overhead, starts, ends))
    # Syncs by API name, as torch_trace counts them, plus any call CUPTI recorded a synchronisation for.
    in_window = runtime[runtime["iteration"] >= 0]
    calls = pd.MultiIndex.from_frame(in_window[["pid", "correlation"]])
    syncs = in_window["api"].isin(SYNC_APIS) | (calls.isin(synced) & ~in_window["api"].isin(_WAIT_APIS))
    values["sync.calls_per_iter"] = float(syncs.sum()) / iterations
    kernels = gpu[gpu["cat"] == "kernel"]
    values["graphs.kernels_per_iter"] = float(kernels["graph_node"].notna().sum()) / iterations
    return ProfileMetrics(values=values, kernels=kernel_table(gpu), profiler="nsys", device="cuda")


class _Export:
    """An export opened read-only, with the tables and columns this version of nsys wrote."""

    def __init__(self, path: Path):
        self.path = path
        if not path.is_file():
            raise TutorError(f"There is no Nsight Systems export at {path}.", _EXPORT)
        try:
            self.db = sqlite3.connect(f"{path.resolve().as_uri()}?mode=ro", uri=True)
            names = [n for (n,) in self.db.execute("SELECT name FROM sqlite_master WHERE type = 'table'")]
        except sqlite3.DatabaseError as exc:
            raise TutorError(f"{path.name} is not an SQLite database ({exc}).", _EXPORT) from exc
        self.tables = {n: {row[1] for row in self.db.execute(f'PRAGMA table_info("{n}")')} for n in names}
        if "StringIds" not in self.tables or not any(n.startswith(("CUPTI_ACTIVITY_KIND_", "NVTX_EVENTS",
                                                                   "TARGET_INFO_")) for n in names):
            self.db.close()
            raise TutorError(f"{path.name} is an SQLite database but not an Nsight Systems export "
                             "(it has no StringIds or CUPTI_ACTIVITY_KIND_* tables).", _EXPORT)

    def __enter__(self) -> "_Export":
        return self

    def __exit__(self, *exc) -> None:
        self.db.close()

    def read(self, table: str, columns: tuple[str, ...] = (), strings: tuple[str, ...] = (),
             pid_of: str | None = None) -> pd.DataFrame:
        """start, end and `columns` of `table`, NULL where this export lacks a column.

        Each of `strings` (a column of ids into StringIds) comes as `<column>_text`;
        `pid` is the process of the GlobalId column `pid_of`, -1 when unknown.
        """
        names = ["start", "end", *columns, *(f"{c}_text" for c in strings), *(["pid"] if pid_of else [])]
        have = self.tables.get(table)
        if have is None:
            return pd.DataFrame({n: pd.Series(dtype=float) for n in names})
        if not {"start", "end"} <= have:
            raise TutorError(f"{self.path.name}: table {table} has no start/end columns, a layout this "
                             f"reader does not know (nsys {self.version()}).",
                             "Profile with --profiler torch meanwhile, and report the nsys version.")
        select = [f't."{c}"' if c in have else f'NULL AS "{c}"' for c in ("start", "end", *columns)]
        joins = []
        for i, column in enumerate(strings):
            if column in have:
                select.append(f's{i}.value AS "{column}_text"')
                joins.append(f'LEFT JOIN StringIds s{i} ON s{i}.id = t."{column}"')
            else:
                select.append(f'NULL AS "{column}_text"')
        if pid_of:
            select.append(f'COALESCE((t."{pid_of}" >> 24) & 16777215, -1) AS pid' if pid_of in have else "-1 AS pid")
        return pd.read_sql_query(f'SELECT {", ".join(select)} FROM "{table}" t {" ".join(joins)}', self.db)

    def labels(self, table: str, default: dict[int, str], column: str = "label") -> dict[int, str]:
        """An ENUM_* table as id -> text, or `default` where the export has no such table."""
        if not {"id", column} <= self.tables.get(table, set()):
            return default
        return {**default, **dict(self.db.execute(f'SELECT id, "{column}" FROM "{table}"').fetchall())}

    def version(self) -> str:
        for table in ("META_DATA_EXPORT", "EXPORT_META_DATA"):  # renamed in nsys 2023
            if {"name", "value"} <= self.tables.get(table, set()):
                row = self.db.execute(f"SELECT value FROM {table} WHERE name = 'EXPORT_PRODUCT_VERSION'").fetchone()
                if row:
                    return str(row[0])
        return "unknown"


def _timed(rows: pd.DataFrame) -> pd.DataFrame:
    """Nanosecond start/end as µs `ts` and `dur`, the unit the metrics are in."""
    return rows.assign(ts=rows["start"].astype(float) / 1e3, dur=(rows["end"] - rows["start"]).astype(float) / 1e3)


def _runtime_calls(export: _Export) -> pd.DataFrame:
    calls = export.read("CUPTI_ACTIVITY_KIND_RUNTIME", ("correlationId", "eventClass"), ("nameId",), "globalTid")
    calls = _timed(calls[calls["eventClass"] != _BACKTRACE_CLASS])
    names = calls["nameId_text"].fillna("").astype(str)
    return pd.DataFrame({"api": names.map({n: API_SUFFIX.sub("", n) for n in names.unique()}),
                         "ts": calls["ts"], "dur": calls["dur"],
                         "correlation": calls["correlationId"].astype(float), "pid": calls["pid"].astype("int64")})


def _gpu_activity(export: _Export) -> pd.DataFrame:
    """Kernels, memcpys and memsets, named and sized as the PyTorch trace names them."""
    kernels = export.read("CUPTI_ACTIVITY_KIND_KERNEL", ("correlationId", "graphNodeId"),
                          ("demangledName", "shortName"), "globalPid")
    kernel_names = kernels["demangledName_text"].fillna(kernels["shortName_text"]).fillna("kernel")
    copy_kinds = {i: _short_copy_kind(n) for i, n in
                  export.labels("ENUM_CUDA_MEMCPY_OPER", {}, column="name").items()} or _COPY_KINDS
    memory = export.labels("ENUM_CUDA_MEM_KIND", _MEMORY_KINDS)
    copies = export.read("CUPTI_ACTIVITY_KIND_MEMCPY", ("correlationId", "graphNodeId", "bytes", "copyKind",
                                                        "srcKind", "dstKind"), pid_of="globalPid")
    copy_names = [f"Memcpy {copy_kinds.get(k, 'Unknown')} ({memory.get(s, 'Unknown')} -> {memory.get(d, 'Unknown')})"
                  for k, s, d in zip(copies["copyKind"], copies["srcKind"], copies["dstKind"])]
    sets = export.read("CUPTI_ACTIVITY_KIND_MEMSET", ("correlationId", "graphNodeId", "bytes", "memKind"),
                       pid_of="globalPid")
    set_names = [f"Memset ({memory.get(k, 'Unknown')})" for k in sets["memKind"]]
    parts = [(kernels, "kernel", [_pytorch_spelling(n) for n in kernel_names]),
             (copies, "gpu_memcpy", copy_names), (sets, "gpu_memset", set_names)]
    return pd.concat([_gpu_rows(rows, cat, names) for rows, cat, names in parts], ignore_index=True)


def _gpu_rows(rows: pd.DataFrame, cat: str, names: list[str]) -> pd.DataFrame:
    rows = _timed(rows)
    return pd.DataFrame({
        "cat": pd.Series(cat, index=rows.index, dtype=object),
        "name": pd.Series(names, index=rows.index, dtype=object),
        "ts": rows["ts"], "dur": rows["dur"],
        "correlation": rows["correlationId"].astype(float),
        "bytes": rows["bytes"].astype(float) if "bytes" in rows else np.nan,
        "pid": rows["pid"].astype("int64"),
        "graph_node": rows["graphNodeId"].astype(float)}, columns=list(_GPU_COLUMNS))


def _short_copy_kind(enum_name: str) -> str:
    """CUDA_MEMCPY_KIND_UVM_HTOD -> "UVM HtoD", the spelling of PyTorch's memcpy names."""
    kind = str(enum_name).removeprefix("CUDA_MEMCPY_KIND_")
    return re.sub(r"([A-Z])TO([A-Z])\b", r"\1to\2", kind).replace("_", " ").replace("UNKNOWN", "Unknown")


def _pytorch_spelling(kernel_name: str) -> str:
    return kernel_name.replace("<unnamed>::", "(anonymous namespace)::")


def _ranges(export: _Export, name: str | None) -> pd.DataFrame:
    """The NVTX ranges called `name`, in µs, with their process."""
    if not name:
        return pd.DataFrame()
    events = export.read("NVTX_EVENTS", ("eventType", "text"), ("textId",), "globalTid")
    label = events["text"].where(events["text"].notna(), events["textId_text"])  # nsys 2022 kept the text inline
    ranges = events[(label == name) & events["end"].notna() & (events["end"] >= events["start"])
                    & (events["eventType"].isna() | events["eventType"].isin(_RANGE_TYPES))]
    return _timed(ranges)


def _outermost(ranges: pd.DataFrame) -> tuple[np.ndarray, np.ndarray]:
    """Start and end of each range not inside another of the same name (a recursive call is one iteration)."""
    ranges = ranges.sort_values(["ts", "dur"], ascending=[True, False])
    starts, ends = ranges["ts"].to_numpy(float), (ranges["ts"] + ranges["dur"]).to_numpy(float)
    reach = np.concatenate([[-np.inf], np.maximum.accumulate(ends)[:-1]])
    outer = starts > reach
    return starts[outer], ends[outer]


def _whole_capture(runtime: pd.DataFrame, gpu: pd.DataFrame) -> tuple[np.ndarray, np.ndarray]:
    """From the first traced API call or GPU activity to the end of the last."""
    starts = np.concatenate([runtime["ts"].to_numpy(float), gpu["ts"].to_numpy(float)])
    ends = np.concatenate([(runtime["ts"] + runtime["dur"]).to_numpy(float), (gpu["ts"] + gpu["dur"]).to_numpy(float)])
    if len(starts) == 0:
        return np.zeros(1), np.zeros(1)
    return np.array([starts.min()]), np.array([ends.max()])


def _launched_in_window(gpu: pd.DataFrame, runtime: pd.DataFrame) -> pd.DataFrame:
    """GPU work whose launch call started in the window, with its launch time, iteration and category."""
    launches = (runtime[runtime["iteration"] >= 0].dropna(subset=["correlation"])
                .drop_duplicates(["pid", "correlation"])[["pid", "correlation", "ts", "iteration"]]
                .rename(columns={"ts": "launch_ts"}))
    if (gpu["pid"] == -1).all() or (launches["pid"] == -1).all():  # an export without process ids on one side
        launches = launches.drop(columns="pid").drop_duplicates("correlation")
    work = gpu.merge(launches, on=[c for c in ("pid", "correlation") if c in launches], how="inner")
    # One id per launch call across processes, the key torch_trace groups a launch's kernels by.
    work = work.assign(correlation=work.groupby(["pid", "correlation"], dropna=False).ngroup().astype(float))
    categories = {n: kernel_category(n) for n in work.loc[work["cat"] == "kernel", "name"].unique()}
    return work.assign(category=work["cat"].map(EVENT_CATEGORY).fillna(work["name"].map(categories)))


def _synchronized(export: _Export) -> pd.MultiIndex:
    """(process, correlationId) of the API calls CUPTI recorded a synchronisation for."""
    rows = export.read("CUPTI_ACTIVITY_KIND_SYNCHRONIZATION", ("correlationId",), pid_of="globalPid")
    rows = rows.dropna(subset=["correlationId"])
    return pd.MultiIndex.from_arrays([rows["pid"].astype("int64"), rows["correlationId"].astype(float)],
                                     names=["pid", "correlation"])
