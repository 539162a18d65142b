"""Where the host's time goes in each profiled iteration of a torch trace: inside operators, in the CUDA runtime's
copies, waits and allocations, in host-side communication, or in none of them (Python, the workload's own code).

The puzzles' metrics count launches and syncs; a diagnosis also needs the time around them, which only the trace's
events give. Every figure is per iteration, in microseconds, under names a report cites like any metric.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd

from tutor.profilers import torch_trace
from tutor.profilers.gpu_timeline import iteration_of

MEMCPY_APIS = ("cudaMemcpy", "cudaMemcpyAsync", "cudaMemcpy2DAsync", "cuMemcpyDtoH", "cuMemcpyHtoD",
               "cuMemcpyAsync", "cuMemcpyDtoHAsync", "cuMemcpyHtoDAsync")
WAIT_APIS = ("cudaStreamSynchronize", "cudaDeviceSynchronize", "cudaEventSynchronize", "cuStreamSynchronize",
             "cuCtxSynchronize", "cuEventSynchronize")
ALLOC_APIS = ("cudaMalloc", "cudaFree", "cuMemAlloc", "cuMemFree", "cudaMallocAsync", "cudaFreeAsync",
              "cuMemCreate", "cuMemMap", "cuMemUnmap", "cuMemRelease", "cuMemAddressReserve", "cuMemAddressFree")
# Operators that move data between processes on the host (gloo's TCP, c10d's calls around it).
HOST_COMM = ("gloo:", "c10d::", "nccl:")
TRACE_SUFFIXES = (".json", ".json.gz")  # a torch trace; another profiler's file (an ncu CSV) has no host row


def host_time_of(path: Path) -> dict[str, float]:
    """`host_time` of a torch trace; nothing for another profiler's file."""
    return host_time(path) if path.name.endswith(TRACE_SUFFIXES) and path.is_file() else {}


def host_time(trace_path: Path) -> dict[str, float]:
    """The host's time per iteration: host.*_us_per_iter (their meanings in metrics.METRIC_DOCS)."""
    events = torch_trace._load_events(Path(trace_path))
    starts, ends = torch_trace._iter_ranges(events, Path(trace_path))
    iterations = len(starts)
    window = float(np.sum(ends - starts))
    # The thread that calls forward(): other threads' operators (a compiler's, a data loader's) overlap its time.
    ranges = events[(events["cat"] == "user_annotation") & (events["name"] == torch_trace.ITER_RANGE)]
    caller = events["tid"].isin(ranges["tid"].unique())
    comm_named = events["name"].astype(str).str.startswith(HOST_COMM)
    spans = events[caller & ((events["cat"] == "cpu_op") | ((events["cat"] == "user_annotation") & comm_named))]
    spans = spans[iteration_of(spans["ts"], starts, ends) >= 0]
    top = spans[torch_trace._top_level(spans)] if not spans.empty else spans
    runtime = torch_trace._runtime_calls(events, starts, ends)
    runtime = runtime[runtime["iteration"] >= 0]

    def api_us(names: tuple[str, ...]) -> float:
        return float(runtime.loc[runtime["api"].isin(names), "dur"].sum()) / iterations

    # gloo's ranges outlast the c10d call that opens them (the send completes later): unions, not top-level sums.
    busy, comm = _union_us(spans), _union_us(spans[comm_named[spans.index]])
    # Runtime calls outside every operator (torch.cuda.empty_cache's frees, a bare synchronize) are not Python's.
    outside_runtime = _outside(runtime, top)
    return {
        "host.window_us_per_iter": window / iterations,
        "host.in_ops_us_per_iter": (busy - comm) / iterations,
        "host.outside_ops_us_per_iter": max(0.0, window - busy - outside_runtime) / iterations,
        "host.memcpy_us_per_iter": api_us(MEMCPY_APIS),
        "host.wait_us_per_iter": api_us(WAIT_APIS),
        "host.alloc_us_per_iter": api_us(ALLOC_APIS),
        "host.comm_us_per_iter": comm / iterations,
    }


def _union_us(spans: pd.DataFrame) -> float:
    """How long at least one of `spans` was open."""
    if spans.empty:
        return 0.0
    order = spans.sort_values("ts")
    begin, end = order["ts"].to_numpy(float), (order["ts"] + order["dur"]).to_numpy(float)
    reach = np.maximum.accumulate(end)
    # A span opens a new stretch where it starts after every earlier span has closed.
    opens = np.r_[True, begin[1:] > reach[:-1]]
    return float(np.sum(np.maximum.reduceat(reach, np.flatnonzero(opens)) - begin[opens]))


def _outside(calls: pd.DataFrame, top: pd.DataFrame) -> float:
    """Time of the runtime calls that start inside no top-level operator."""
    if calls.empty:
        return 0.0
    if top.empty:
        return float(calls["dur"].sum())
    order = top.sort_values("ts")
    op_starts, op_ends = order["ts"].to_numpy(float), (order["ts"] + order["dur"]).to_numpy(float)
    # The latest operator starting at or before each call; the call is inside it if it starts before it ends.
    before = np.searchsorted(op_starts, calls["ts"].to_numpy(float), side="right") - 1
    inside = (before >= 0) & (calls["ts"].to_numpy(float) <= op_ends[np.clip(before, 0, None)])
    return float(calls["dur"].to_numpy(float)[~inside].sum())
