"""Trace-analysis speed: our `extract()` against Holistic Trace Analysis (HTA) on one big real-shaped trace.

    .venv/bin/python benchmarks/trace_analysis.py [--events 1000000] [--runs 3] [--trace PATH] [--gz]

Tiles a trace recorded on the H100 (puzzle1's shipped baseline recording by default)
until it holds --events events, writes it once as a PyTorch-profiler-shaped file
(`rank-0.json`, with `distributedInfo.rank`, in a directory of its own, as HTA
wants), then times each tool on that file in fresh subprocesses: the median
seconds of --runs runs (imports excluded) and the peak resident memory of the
process. HTA computes the analyses closest to our metrics: kernel breakdown,
idle-time breakdown and kernel launch stats. HTA comes with the bench extra
(`pip install -e '.[bench]'`); without it, ours is timed alone and the script says so.

Target (issue 5): at least 5x faster than HTA and under 5 s on the 2-core machine.
"""

from __future__ import annotations

import argparse
import gzip
import json
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import msgspec

ROOT = Path(__file__).resolve().parents[1]
# Per-iteration metrics a faithful tiling leaves unchanged (busy/idle shift a little: copies sit side by side).
INVARIANT_METRICS = ("cpu.ops_per_iter", "cpu.allocs_per_iter", "kernels.per_iter", "gpu.time_per_iter_us",
                     "launch.api_us_per_iter", "launch.latency_us_median")
ID_ARGS = ("correlation", "External id", "Ev Idx")  # ids that must stay unique across copies
GAP_US = 1.0  # between one copy's last event and the next copy's first


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--events", type=int, default=1_000_000)
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--trace", type=Path,
                        default=ROOT / "challenges" / "puzzle1" / "recordings" / "baseline_trace.json.gz")
    parser.add_argument("--gz", action="store_true", help="write rank-0.json.gz instead of plain JSON")
    parser.add_argument("--child", nargs=2, metavar=("TOOL", "TRACE"), help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        return _child(*args.child)

    base = _read(args.trace)
    with tempfile.TemporaryDirectory(prefix="infprof-trace-bench-") as tmp:
        t0 = time.perf_counter()
        big = tile(base, args.events)
        path = Path(tmp) / ("rank-0.json.gz" if args.gz else "rank-0.json")
        write_trace(big, path)
        events = len(big["traceEvents"])
        del big
        print(f"trace: {events:,} events (tiled from {args.trace.name}, {len(base['traceEvents']):,} events), "
              f"{path.stat().st_size / 1e6:.0f} MB {path.suffix}, built in {time.perf_counter() - t0:.1f} s")
        print(f"load: {os.getloadavg()[0]:.2f} (1-min average), {os.cpu_count()} cores")
        _check_tiling(args.trace, path)

        results = {}
        tools = ("ours", "hta") if _hta_installed() else ("ours",)
        if len(tools) == 1:
            print("HTA is not installed (pip install -e '.[bench]'): timing ours alone, no ratio", flush=True)
        for tool in tools:
            runs = [_run_child(tool, path) for _ in range(args.runs)]
            results[tool] = (statistics.median(r["seconds"] for r in runs), max(r["peak_rss_mb"] for r in runs))
            parse = f", of which parsing {statistics.median(r['parse_seconds'] for r in runs):.2f} s" \
                if "parse_seconds" in runs[0] else ""
            print(f"{tool:>4}: median {results[tool][0]:6.2f} s of {[round(r['seconds'], 2) for r in runs]}{parse}; "
                  f"peak RSS {results[tool][1]:6.0f} MB", flush=True)
    if "hta" in results:
        ours, hta = results["ours"], results["hta"]
        print(f"ratio: ours is {hta[0] / ours[0]:.1f}x faster than HTA and peaks at {ours[1] / hta[1]:.2f}x its memory")
    print(f"load after: {os.getloadavg()[0]:.2f}")
    return 0


def _hta_installed() -> bool:
    import importlib.util

    return importlib.util.find_spec("hta") is not None


def tile(trace: dict, min_events: int) -> dict:
    """`trace` repeated back to back until it has `min_events` events, a valid trace for both tools.

    Metadata (ph "M"), the profiler's own span and its global instants appear once;
    every other event is copied with its timestamp shifted by the recording's length
    and its correlation/external/flow ids offset, so launches still find their kernels.
    """
    frame = [e for e in trace["traceEvents"] if _is_frame(e)]
    body = [e for e in trace["traceEvents"] if not _is_frame(e)]
    start = min(e["ts"] for e in body)
    period = max(e["ts"] + e.get("dur", 0) for e in body) - start + GAP_US
    id_stride = 10 ** len(str(max(_ids(body))))
    copies = max(1, -(-(min_events - len(frame)) // len(body)))

    events = []
    for k in range(copies):
        shift, id_shift = k * period, k * id_stride
        events.extend(_shifted(e, shift, id_shift) for e in body)
    stretch = (copies - 1) * period
    for e in frame:
        e = dict(e)
        if e.get("cat") == "Trace":
            e["dur"] = round(e["dur"] + stretch, 3)
        elif e.get("ph") != "M" and e["ts"] > start:  # "Record Window End" closes the last copy
            e["ts"] = round(e["ts"] + stretch, 3)
        events.append(e)
    return {**{k: v for k, v in trace.items() if k != "traceEvents"}, "distributedInfo": {"rank": 0},
            "traceEvents": events}


def _is_frame(event: dict) -> bool:
    return event.get("ph") == "M" or event.get("cat") in (None, "Trace")


def _ids(events: list[dict]):
    for e in events:
        if "id" in e:
            yield e["id"]
        for key in ID_ARGS:
            if key in e.get("args", ()):
                yield e["args"][key]


def _shifted(event: dict, shift: float, id_shift: int) -> dict:
    event = dict(event, ts=round(event["ts"] + shift, 3))
    if "id" in event:
        event["id"] += id_shift
    if "args" in event and any(key in event["args"] for key in ID_ARGS):
        event["args"] = {k: v + id_shift if k in ID_ARGS else v for k, v in event["args"].items()}
    return event


def write_trace(trace: dict, path: Path) -> None:
    """The layout PyTorch writes: header keys first (HTA finds the rank line by line), one event a line."""
    header = {k: v for k, v in trace.items() if k != "traceEvents"}
    opener = gzip.open if path.suffix == ".gz" else open
    with opener(path, "wb") as f:
        f.write(b"{\n")
        for key, value in header.items():
            f.write(f"  {json.dumps(key)}: {json.dumps(value)},\n".encode())
        f.write(b'  "traceEvents": [\n')
        f.write(b",\n".join(map(msgspec.json.encode, trace["traceEvents"])))
        f.write(b"\n  ]\n}\n")


def _read(path: Path) -> dict:
    return json.loads(gzip.decompress(path.read_bytes()))


def _check_tiling(fixture: Path, tiled: Path) -> None:
    """Fail loudly if the tiled trace changed what one iteration looks like."""
    from tutor.profilers.torch_trace import extract

    small, big = extract(fixture).values, extract(tiled).values
    for name in INVARIANT_METRICS:
        if name in small and abs(big[name] - small[name]) > 1e-6 * max(1.0, abs(small[name])):
            raise SystemExit(f"tiling broke {name}: {small[name]} in the fixture, {big[name]} tiled")
    print(f"check: {int(big['iterations'])} iterations; per-iteration metrics match the fixture's")


def _run_child(tool: str, path: Path) -> dict:
    done = subprocess.run([sys.executable, __file__, "--child", tool, str(path)], cwd=ROOT,
                          capture_output=True, text=True)
    marked = [line for line in done.stdout.splitlines() if line.startswith("RESULT ")]
    if done.returncode or not marked:
        raise SystemExit(f"{tool} failed (exit {done.returncode}):\n{(done.stdout + done.stderr)[-3000:]}")
    return json.loads(marked[-1].removeprefix("RESULT "))


def _child(tool: str, trace: str) -> int:
    """One timed analysis in this fresh process; prints seconds and this process's peak RSS."""
    path, result = Path(trace), {}
    if tool == "ours":
        from tutor.profilers.torch_trace import extract

        t0 = time.perf_counter()
        extract(path)
    else:
        from hta.trace_analysis import TraceAnalysis

        t0 = time.perf_counter()
        analysis = TraceAnalysis(trace_dir=str(path.parent))
        result["parse_seconds"] = time.perf_counter() - t0
        analysis.get_gpu_kernel_breakdown(visualize=False)
        analysis.get_idle_time_breakdown(visualize=False)
        analysis.get_cuda_kernel_launch_stats(visualize=False)
    result["seconds"] = time.perf_counter() - t0
    result["peak_rss_mb"] = _peak_rss_mb()
    print("RESULT " + json.dumps(result))
    return 0


def _peak_rss_mb() -> float:
    """This process's own peak. ru_maxrss would not do: it keeps the parent's peak across fork and exec."""
    try:
        status = Path("/proc/self/status").read_text()
        return next(int(line.split()[1]) for line in status.splitlines() if line.startswith("VmHWM:")) / 1024
    except (OSError, StopIteration):
        return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024  # KiB on Linux


if __name__ == "__main__":
    sys.exit(main())
