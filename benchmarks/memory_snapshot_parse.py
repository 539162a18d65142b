"""How fast the memory profiler reads a long allocator history (tutor.profilers.memory_snapshot).

    .venv/bin/python benchmarks/memory_snapshot_parse.py [--events 500000] [--depth 30] [--runs 3] [--json]

Writes one snapshot in torch's format with --events allocator events (a decode loop's allocations
and frees, each with a Python stack --depth frames deep, as torch records with stacks="python"),
then reads it with `extract()` in fresh subprocesses: the median seconds of --runs runs (the pickle
load and the walk) and the peak resident memory of the process. A decode run's history holds
hundreds of thousands of events; the walk keeps nothing per event, so its memory is the unpickled
snapshot's. Real H100 snapshots: tests/fixtures/record_memory_snapshots.py.
"""

from __future__ import annotations

import argparse
import json
import pickle
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
MB = 2**20

READ = """
import resource, sys, time
t = time.perf_counter()
from tutor.profilers.memory_snapshot import extract
m = extract(__import__("pathlib").Path(sys.argv[1]), iterations=int(sys.argv[2]))
seconds = time.perf_counter() - t
print(seconds, resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024, m.values["allocator.events"])
"""


def stack(phase: str, depth: int, line: int) -> list[dict]:
    inner = [{"filename": f"/site-packages/torch/module_{i}.py", "line": 100 + i, "name": f"f{i}"}
             for i in range(max(0, depth - 3))]
    return [*inner, {"filename": "/ws/puzzle/workload.py", "line": line, "name": "forward"},
            {"filename": "/site-packages/tutor/harness/memory_history.py", "line": 40, "name": f"infprof_phase_{phase}"},
            {"filename": "/site-packages/tutor/harness/alone.py", "line": 70, "name": "allocations"}]


def snapshot(events: int, depth: int) -> tuple[dict, int]:
    """A decode loop: per step, 16 activations allocated and freed (3 events each); (snapshot, steps)."""
    trace = [{"action": "segment_alloc", "addr": 1 << 40, "size": 1 << 30, "stream": 0, "frames": stack("prepare", depth, 5)}]
    steps = 0
    while len(trace) < events:
        phase = "warmup" if steps < 10 else "iterations"
        for layer in range(16):
            frames = stack(phase, depth, 10 + layer)
            addr, size = (1 << 40) + layer * 4 * MB, 4 * MB
            trace += [{"action": "alloc", "addr": addr, "size": size, "stream": 0, "frames": frames},
                      {"action": "free_requested", "addr": addr, "size": size, "stream": 0, "frames": frames},
                      {"action": "free_completed", "addr": addr, "size": size, "stream": 0, "frames": []}]
        steps += 1
    segments = [{"device": 0, "address": 1 << 40, "total_size": 1 << 30, "segment_pool_id": (0, 0),
                 "blocks": [{"address": 1 << 40, "size": 1 << 30, "state": "inactive", "frames": []}]}]
    return {"segments": segments, "device_traces": [trace]}, steps - 10


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--events", type=int, default=500_000)
    parser.add_argument("--depth", type=int, default=30, help="frames per stack")
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        data, iterations = snapshot(args.events, args.depth)
        path = Path(tmp) / "memory.pickle"
        path.write_bytes(pickle.dumps(data, protocol=pickle.HIGHEST_PROTOCOL))
        size_mb = path.stat().st_size / 1e6
        del data
        runs = []
        for _ in range(args.runs):
            out = subprocess.run([sys.executable, "-c", READ, str(path), str(iterations)], cwd=ROOT,
                                 capture_output=True, text=True, check=True).stdout.split()
            runs.append((float(out[0]), float(out[1]), int(out[2])))
    figures = {"events": runs[0][2], "pickle_mb": round(size_mb, 1), "seconds_median": round(statistics.median(r[0] for r in runs), 3),
               "seconds": [round(r[0], 3) for r in runs], "peak_rss_mb": round(max(r[1] for r in runs), 1),
               "frames_per_event": args.depth}
    if args.json:
        print(json.dumps(figures))
    else:
        print(f"{figures['events']} events ({figures['pickle_mb']} MB pickled, {args.depth} frames a stack): "
              f"read in {figures['seconds_median']} s (median of {args.runs}: {figures['seconds']}), "
              f"peak RSS {figures['peak_rss_mb']} MB")


if __name__ == "__main__":
    main()
