"""Read a CUDA allocator snapshot (torch.cuda.memory._snapshot(), pickled) into ProfileMetrics.

One pass over the device's trace of allocator events, in order: allocated bytes move on `alloc`
and `free_completed`, reserved bytes on `segment_alloc`/`segment_free` (and `segment_map`/
`segment_unmap` for expandable segments). Each event's phase is the phase function on its Python
stack (tutor.protocol.MEMORY_PHASES); an event without one (a free completed later, on a stream
event) belongs to the phase of the event before it. The trace is a ring buffer that may have lost
its oldest events: the running totals are anchored to the segments the snapshot holds at its end.

Fields read, and what is done without them: `device_traces` (required), each event's `action`,
`addr`, `size`, `frames` (no frames: one phase, "unknown"); the segments' `total_size`,
`segment_pool_id` (absent: no graph pools are counted) and their blocks' `size` and `state`.
Tested on snapshots built in torch 2.11's format (tests/test_memory_profiler.py); the H100
recordings join them in tests/fixtures/memory/ once tests/fixtures/record_memory_snapshots.py has run.
"""

from __future__ import annotations

import pickle
import re
from collections import defaultdict
from dataclasses import dataclass, field
from pathlib import Path

from tutor.metrics import ProfileMetrics
from tutor.protocol import MEMORY_PHASES

MB = 2**20
PHASES = tuple(MEMORY_PHASES.values())
SERIES_POINTS = 400  # the timeline a plot shows: each point the peak of its share of the events
TOP_SITES = 15
# Frames that are never where memory was asked for: torch's and triton's Python, the harness, the stdlib.
NOT_A_SITE = re.compile(r"/torch/|/triton/|/tutor/harness/|<frozen|/lib/python3\.\d+/(?!site-packages|dist-packages)")
# Installed libraries (torchao, gemlite): a site only where no frame of the puzzle's or the learner's own
# code asked (a puzzle's files are its own wherever the tutor is installed).
LIBRARY = re.compile(r"/(site|dist)-packages/(?!challenges/)")


@dataclass
class Phase:
    # Peaks relative to the trace's first event (the snapshot's end anchors them); None before any event.
    peak_allocated: int | None = None
    peak_reserved: int | None = None
    allocated: int = 0  # bytes of all allocations made in it
    freed: int = 0
    allocations: int = 0
    largest: int = 0
    segment_allocs: int = 0  # the allocator's calls for memory from CUDA (cudaMalloc, or pages mapped)
    segment_frees: int = 0  # and back (cudaFree, which waits for the GPU, or pages unmapped)


@dataclass
class Site:
    count: int = 0
    total: int = 0
    largest: int = 0


@dataclass
class Walk:
    """What one pass over the events keeps: nothing per event, so a long history costs no memory."""

    events: int = 0
    phases: dict[str, Phase] = field(default_factory=lambda: defaultdict(Phase))
    sites: dict[tuple[str, str], Site] = field(default_factory=lambda: defaultdict(Site))
    allocated: int = 0  # at the end, relative to the start
    reserved: int = 0
    peak_allocated: int | None = None
    reserved_at_peak: int = 0
    series_allocated: list[int] = field(default_factory=list)  # each point the peak of its slice of events
    series_reserved: list[int] = field(default_factory=list)
    phase_starts: dict[str, int] = field(default_factory=dict)  # the series point where each phase begins


def load(path: Path) -> dict:
    with open(path, "rb") as f:
        snapshot = pickle.load(f)
    if isinstance(snapshot, list):  # torch < 2.0 pickled the segments alone
        snapshot = {"segments": snapshot, "device_traces": []}
    return snapshot


def phase_of(frames: list[dict]) -> str | None:
    for frame in frames:
        if frame.get("name") in MEMORY_PHASES:
            return MEMORY_PHASES[frame["name"]]
    return None


def site_of(frames: list[dict]) -> str:
    """Where the memory was asked for: the innermost frame of a workload (the learner's, the baseline,
    the spec), else of the library that asked (torchao dequantising a weight), else torch itself."""
    library = None
    for frame in frames:
        filename = frame.get("filename", "")
        if not filename or NOT_A_SITE.search(filename):
            continue
        if not LIBRARY.search(filename):
            return _where(frame)
        library = library or frame
    if library is not None:
        return _where(library)
    return "(inside torch)" if frames else "(no stack recorded)"


def _where(frame: dict) -> str:
    return f"{Path(frame['filename']).name}:{frame.get('line', '?')} {frame.get('name', '?')}"


def walk(trace: list[dict]) -> Walk:
    """The running totals and per-phase, per-site sums of one device's events, in one pass."""
    w = Walk(events=len(trace))
    step = max(1, -(-len(trace) // SERIES_POINTS))
    allocated = reserved = 0
    phase = "unknown"
    for i, event in enumerate(trace):
        action, size = event.get("action"), int(event.get("size", 0))
        frames = event.get("frames") or []
        phase = phase_of(frames) or phase
        p = w.phases[phase]
        if action == "alloc":
            allocated += size
            p.allocated += size
            p.allocations += 1
            p.largest = max(p.largest, size)
            site = w.sites[(site_of(frames), phase)]
            site.count += 1
            site.total += size
            site.largest = max(site.largest, size)
        elif action == "free_completed":
            allocated -= size
            p.freed += size
        elif action in ("segment_alloc", "segment_map"):
            reserved += size
            p.segment_allocs += 1
        elif action in ("segment_free", "segment_unmap"):
            reserved -= size
            p.segment_frees += 1
        p.peak_allocated = allocated if p.peak_allocated is None else max(p.peak_allocated, allocated)
        p.peak_reserved = reserved if p.peak_reserved is None else max(p.peak_reserved, reserved)
        if w.peak_allocated is None or allocated > w.peak_allocated:
            w.peak_allocated, w.reserved_at_peak = allocated, reserved
        point = i // step
        if point == len(w.series_allocated):
            w.series_allocated.append(allocated)
            w.series_reserved.append(reserved)
        else:
            w.series_allocated[point] = max(w.series_allocated[point], allocated)
            w.series_reserved[point] = max(w.series_reserved[point], reserved)
        w.phase_starts.setdefault(phase, point)
    w.allocated, w.reserved = allocated, reserved
    return w


def held_at_end(snapshot: dict) -> tuple[int, int]:
    """(allocated, reserved) bytes the snapshot's segments hold when it was taken."""
    reserved = sum(int(s.get("total_size", 0)) for s in snapshot.get("segments", []))
    allocated = sum(int(b.get("size", 0)) for s in snapshot.get("segments", []) for b in s.get("blocks", [])
                    if str(b.get("state", "")).startswith("active"))
    return allocated, reserved


def graph_pools(snapshot: dict) -> tuple[int, float]:
    """(private pools, MB in them): CUDA graphs' memory, which no other allocation may use."""
    pools: dict[tuple, int] = defaultdict(int)
    for s in snapshot.get("segments", []):
        pool = tuple(s.get("segment_pool_id") or (0, 0))
        if pool != (0, 0):
            pools[pool] += int(s.get("total_size", 0))
    return len(pools), sum(pools.values()) / MB


def extract(path: Path, iterations: int) -> ProfileMetrics:
    snapshot = load(path)
    traces = [t for t in snapshot.get("device_traces", []) if t]
    w = walk(traces[0] if traces else [])
    end_alloc, end_reserved = held_at_end(snapshot)
    # Anchor the running totals to what the segments hold at the end (the ring buffer may have
    # dropped the oldest events, and whatever was allocated before recording started).
    at_alloc, at_reserved = end_alloc - w.allocated, end_reserved - w.reserved
    values: dict[str, float] = {"iterations": iterations, "allocator.events": w.events}
    for name, p in w.phases.items():
        values[f"allocator.{name}.peak_allocated_mb"] = (p.peak_allocated + at_alloc) / MB
        values[f"allocator.{name}.peak_reserved_mb"] = (p.peak_reserved + at_reserved) / MB
        values[f"allocator.{name}.largest_alloc_mb"] = p.largest / MB
        values[f"allocator.{name}.allocs"] = p.allocations
    it = w.phases.get("iterations")
    if it is not None and iterations:
        values["allocator.allocated_mb_per_iter"] = it.allocated / MB / iterations
        values["allocator.freed_mb_per_iter"] = it.freed / MB / iterations
        values["allocator.allocs_per_iter"] = it.allocations / iterations
        values["allocator.segment_allocs_per_iter"] = it.segment_allocs / iterations
        values["allocator.segment_frees_per_iter"] = it.segment_frees / iterations
    if w.peak_allocated is not None:
        values["allocator.peak_allocated_mb"] = (w.peak_allocated + at_alloc) / MB
        values["allocator.fragmentation_mb"] = ((w.reserved_at_peak + at_reserved) - (w.peak_allocated + at_alloc)) / MB
    values["allocator.graph_pools"], values["allocator.graph_pool_mb"] = graph_pools(snapshot)
    values["allocator.reserved_mb"] = end_reserved / MB
    total = sum(s.total for s in w.sites.values()) or 1
    top = sorted(w.sites.items(), key=lambda kv: -kv[1].total)[:TOP_SITES]
    sites = [{"site": site, "phase": phase, "count": s.count, "total_mb": s.total / MB,
              "largest_mb": s.largest / MB, "share": s.total / total} for (site, phase), s in top]
    series = {"allocated_mb": [(v + at_alloc) / MB for v in w.series_allocated],
              "reserved_mb": [(v + at_reserved) / MB for v in w.series_reserved],
              "phase_starts": w.phase_starts} if w.events else {}
    return ProfileMetrics(values, sites, profiler="memory", device="cuda", series=series)
