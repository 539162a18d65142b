"""The GPU-timeline maths both timeline readers share (tutor.profilers.torch_trace, nsys_sqlite).

Each reader turns its own format into the same tables (runtime calls with their iteration,
GPU work with launch time and category); from there the metrics, the kernel table and the
kernel categories are computed here, once.
"""

from __future__ import annotations

import re

import numpy as np
import pandas as pd

LAUNCH_APIS = frozenset({"cudaLaunchKernel", "cuLaunchKernel", "cudaLaunchKernelExC", "cuLaunchKernelEx",
                         "cudaGraphLaunch"})
GRAPH_APIS = frozenset({"cudaGraphLaunch", "cuGraphLaunch"})
# Calls that make the host wait for the device. cudaMemcpy (not ...Async) waits
# for the copy; cudaStreamWaitEvent only makes one stream wait for another.
SYNC_APIS = frozenset({"cudaDeviceSynchronize", "cudaStreamSynchronize", "cudaEventSynchronize", "cudaMemcpy",
                       "cuCtxSynchronize", "cuStreamSynchronize", "cuEventSynchronize"})

# Kernel name -> category: first match wins, tested against the lower-cased
# short name (template arguments dropped: a flash-attention kernel names
# cutlass types in them). Triton's generated-kernel prefixes come first since
# they say what the kernel does; nccl before "reduce" (AllReduce is comm).
KERNEL_CATEGORIES: tuple[tuple[str, re.Pattern], ...] = tuple(
    (category, re.compile(pattern)) for category, pattern in (
        ("gemm", r"^triton_tem_"),
        ("reduction", r"^triton_(red|per)_"),
        ("triton", r"^triton_"),
        ("attention", r"flash|fmha|attention"),
        ("comm", r"nccl"),
        ("gemm", r"gemm|gemv|cutlass|xmma|nvjet|cublas|matmul"),
        ("reduction", r"reduce|softmax|norm"),
        ("copy", r"copy|catarray|transpose|memcpy\d"),
        # multi_tensor_apply: foreach ops (_foreach_copy_ is how cudagraph trees refill static inputs)
        ("elementwise", r"elementwise|vectorized|unrolled|fill|multi_tensor_apply"),
    ))
EVENT_CATEGORY = {"gpu_memcpy": "memcpy", "gpu_memset": "memset"}

API_SUFFIX = re.compile(r"(_v\d+)?(_ptsz|_ptds)?$")  # cudaGraphLaunch_v10000, cudaMemcpyAsync_ptsz
_MAX_NAME = 80


def iteration_of(ts: pd.Series | np.ndarray, starts: np.ndarray, ends: np.ndarray) -> np.ndarray:
    """Index of the iter range each timestamp falls in, -1 outside all of them (ranges never overlap)."""
    ts = np.asarray(ts, dtype=float)
    idx = np.searchsorted(starts, ts, side="right") - 1
    inside = (idx >= 0) & (ts <= ends[np.clip(idx, 0, None)])
    return np.where(inside, idx, -1)


def gpu_metrics(gpu: pd.DataFrame, runtime: pd.DataFrame, overhead: pd.DataFrame,
                 starts: np.ndarray, ends: np.ndarray) -> dict[str, float]:
    iterations = len(starts)
    kernels = gpu[gpu["cat"] == "kernel"]
    in_window = runtime[runtime["iteration"] >= 0]
    span_start = starts[0]
    span_end = max(ends[-1], float((gpu["ts"] + gpu["dur"]).max()) if len(gpu) else ends[-1])
    gpu_starts, gpu_ends = gpu["ts"].to_numpy(float), (gpu["ts"] + gpu["dur"]).to_numpy(float)
    busy = union_length(gpu_starts, gpu_ends, span_start, span_end)
    # The profiler's own stalls (CUPTI "Activity Buffer Request", ~3 ms on the H100
    # at the first iteration) are not the workload's idle time: leave them out of the span.
    stalled = union_length(np.concatenate([gpu_starts, overhead["ts"].to_numpy(float)]),
                            np.concatenate([gpu_ends, (overhead["ts"] + overhead["dur"]).to_numpy(float)]),
                            span_start, span_end) - busy
    span = span_end - span_start - stalled

    values = {
        "kernels.per_iter": len(kernels) / iterations,
        "gpu.time_per_iter_us": float(kernels["dur"].sum()) / iterations,
        "gpu.busy_fraction": busy / span if span > 0 else 0.0,
        "gpu.idle_us_per_iter": (span - busy) / iterations,
        "launch.api_us_per_iter": float(in_window.loc[in_window["api"].isin(LAUNCH_APIS), "dur"].sum()) / iterations,
        "sync.calls_per_iter": float(in_window["api"].isin(SYNC_APIS).sum()) / iterations,
        "graphs.replays_per_iter": float(in_window["api"].isin(GRAPH_APIS).sum()) / iterations,
    }
    if len(kernels):
        # First kernel per launch call: a graph launch's later kernels wait for the earlier ones.
        first = kernels.groupby("correlation")[["ts", "launch_ts"]].min()
        values["launch.latency_us_median"] = float((first["ts"] - first["launch_ts"]).median())

    total_us = float(gpu["dur"].sum())
    per_category = gpu.groupby("category")["dur"].sum()
    for category, us in per_category.items():
        values[f"kernels.category.{category}.share"] = float(us) / total_us if total_us > 0 else 0.0
        values[f"kernels.category.{category}.us_per_iter"] = float(us) / iterations

    copies = gpu[gpu["cat"] == "gpu_memcpy"]
    h2d = copies[copies["name"].str.contains("HtoD", regex=False)]
    d2h = copies[copies["name"].str.contains("DtoH", regex=False)]
    values["memcpy.h2d_bytes_per_iter"] = float(h2d["bytes"].sum()) / iterations
    values["memcpy.d2h_bytes_per_iter"] = float(d2h["bytes"].sum()) / iterations
    for way, way_copies in (("h2d", h2d), ("d2h", d2h)):
        us = float(way_copies["dur"].sum())
        if us > 0:
            values[f"memcpy.{way}_gbps"] = float(way_copies["bytes"].sum()) / us / 1e3  # bytes/us -> GB/s
    values["memcpy.pageable_per_iter"] = float(copies["name"].str.contains("Pageable", regex=False).sum()) / iterations
    values.update(comm_metrics(gpu, iterations))
    return {name: float(value) for name, value in values.items()}


def union_length(starts: np.ndarray, ends: np.ndarray, lo: float, hi: float) -> float:
    """Time within [lo, hi] covered by at least one interval (overlapping streams count once)."""
    if len(starts) == 0:
        return 0.0
    starts, ends = merged(np.clip(starts, lo, hi), np.clip(ends, lo, hi))
    return float((ends - starts).sum())


def comm_metrics(gpu: pd.DataFrame, iterations: int) -> dict[str, float]:
    """A rank's collectives (NCCL kernels, category "comm"): how many a forward() launches, the bytes their
    messages carry and their bus bandwidth where the reader knows the messages (columns message_bytes and
    bus_bytes), and how much of their time other kernels ran beside them. Nothing without collectives."""
    comm = gpu[gpu["category"] == "comm"]
    if comm.empty:
        return {}
    others = gpu[(gpu["cat"] == "kernel") & (gpu["category"] != "comm")]
    starts, ends = comm["ts"].to_numpy(float), (comm["ts"] + comm["dur"]).to_numpy(float)
    beside = covered(others["ts"].to_numpy(float), (others["ts"] + others["dur"]).to_numpy(float), starts, ends)
    comm_us = float(comm["dur"].sum())
    values = {"comm.kernels_per_iter": len(comm) / iterations,
              "comm.overlap_share": float(beside.sum()) / comm_us if comm_us > 0 else 0.0}
    if "message_bytes" in comm and comm["message_bytes"].notna().any():
        known = comm[comm["bus_bytes"].notna()]
        values["comm.bytes_per_iter"] = float(comm["message_bytes"].sum()) / iterations
        if float(known["dur"].sum()) > 0:
            values["comm.bus_gbps"] = float(known["bus_bytes"].sum()) / float(known["dur"].sum()) / 1e3  # B/us -> GB/s
    return values


def merged(starts: np.ndarray, ends: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The intervals' union as disjoint intervals, in order."""
    order = np.argsort(starts, kind="stable")
    starts, ends = starts[order], ends[order]
    reach = np.maximum.accumulate(ends)
    # An interval opens a new busy stretch when it starts after everything before it ended.
    opens = np.empty(len(starts), dtype=bool)
    opens[0] = True
    opens[1:] = starts[1:] > reach[:-1]
    first = np.flatnonzero(opens)
    return starts[first], np.maximum.reduceat(reach, first)


def covered(starts: np.ndarray, ends: np.ndarray, lo: np.ndarray, hi: np.ndarray) -> np.ndarray:
    """For each window [lo, hi], the time within it that at least one of the intervals covers."""
    if len(starts) == 0:
        return np.zeros(len(lo))
    starts, ends = merged(starts, ends)
    before = np.concatenate([[0.0], np.cumsum(ends - starts)])  # union length before each merged interval

    def upto(t: np.ndarray) -> np.ndarray:  # union length before time t
        i = np.searchsorted(starts, t, side="right")  # merged intervals that start at or before t
        last = np.clip(i - 1, 0, None)
        inside = np.clip(t - starts[last], 0.0, ends[last] - starts[last])
        return np.where(i > 0, before[last] + inside, 0.0)

    return upto(hi) - upto(lo)


def kernel_table(gpu: pd.DataFrame) -> list[dict]:
    """One row per kernel (and memcpy/memset) name, longest total time first."""
    if gpu.empty:
        return []
    table = (gpu.groupby("name", sort=False)
             .agg(category=("category", "first"), cat=("cat", "first"), count=("dur", "size"),
                  total_us=("dur", "sum"), mean_us=("dur", "mean"))
             .reset_index().rename(columns={"name": "full_name"}))
    total = table["total_us"].sum()
    table["share"] = table["total_us"] / total if total > 0 else 0.0
    table["name"] = [display_name(n) if c == "kernel" else n for n, c in zip(table["full_name"], table["cat"])]
    table = table.sort_values(["total_us", "full_name"], ascending=[False, True], kind="stable")
    table["count"] = table["count"].astype(int)
    columns = ["name", "category", "count", "total_us", "mean_us", "share", "full_name"]
    return table[columns].to_dict("records")


def display_name(full_name: str) -> str:
    """A kernel name without return type and template/argument lists, at most 80 characters."""
    return short_name(full_name)[:_MAX_NAME]


def short_name(full_name: str) -> str:
    name = full_name.removeprefix("void ").replace("(anonymous namespace)::", "")
    return re.split(r"[<(]", name, maxsplit=1)[0].strip() or name


def kernel_category(full_name: str) -> str:
    """The category a kernel's name places it in (see KERNEL_CATEGORIES)."""
    short = short_name(full_name).lower()
    for category, pattern in KERNEL_CATEGORIES:
        if pattern.search(short):
            return category
    return "other"
