"""How each profiler takes a profile: run the harness under it, then read what it wrote into metrics.

Every function has one signature, (request, run_dir, puzzle, on_event, register) -> (metrics,
the file a learner opens), and is named by its profiler's record (tutor.profilers.registry).
Parsers load only here, when a profile is read: pandas and sqlite stay out of the faces' start-up.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

from tutor.errors import TutorError
from tutor.runner import run_harness

if TYPE_CHECKING:
    from tutor.catalog import Puzzle
    from tutor.metrics import ProfileMetrics


def _extracting(on_event, detail: str) -> None:
    if on_event:
        on_event({"type": "stage", "stage": "extracting", "detail": detail})


def torch_profile(request: dict, run_dir: Path, puzzle: Puzzle, on_event, register) -> tuple[ProfileMetrics, Path]:
    from tutor.profilers.torch_trace import extract  # pandas: only when a profile is read

    trace_path = run_dir / "trace.json"
    request["profile"]["trace_path"] = str(trace_path)
    outcome = run_harness(request, run_dir, puzzle.timing.timeout_s, on_event, register)
    _extracting(on_event, "reading the trace")
    metrics = extract(trace_path, outcome.result.get("memory"))
    # A server's replay (a serving puzzle): what the harness's own stamps showed, beside the trace's per-step view.
    metrics.values.update({f"serving.{k}": float(v) for k, v in outcome.result.get("serving", {}).items()})
    # A rank group's link at its best (tutor.harness.link_probe), and the profiled collectives' rate against it.
    metrics.values.update({f"comm.{k}": float(v) for k, v in outcome.result.get("comm", {}).items()})
    values = metrics.values
    if values.get("comm.link_peak_gbps") and "comm.bus_gbps" in values:
        values["comm.link_peak_share"] = values["comm.bus_gbps"] / values["comm.link_peak_gbps"]
    # The other ranks' traces lie beside rank 0's (tutor.harness.ranks): their figures as rankN.<metric>, so a
    # diagnosis can cite what only another GPU shows (the stage, or the experts, that keep it busy while rank 0 waits).
    for other in sorted(run_dir.glob("trace.rank*.json")):
        rank = other.name.removeprefix("trace.rank").removesuffix(".json")
        values.update({f"rank{rank}.{k}": v for k, v in extract(other).values.items() if k != "iterations"})
    return metrics, trace_path


def ncu_profile(request: dict, run_dir: Path, puzzle: Puzzle, on_event, register) -> tuple[ProfileMetrics, Path]:
    from tutor.profilers import ncu

    binary = ncu.find_usable_ncu()
    request["mode"] = "kernels"
    # Kernels are deterministic in their counters: one iteration is enough, and each launch is replayed ~40x.
    request["profile"]["iterations"] = 1
    # Autotune outside the profiler first: under ncu the timings are distorted and triton would pick
    # (and store) another config than the graded runs use. The harness keeps the result on disk.
    if request["device"] == "cuda":
        run_harness(request, run_dir / "tuning", puzzle.timing.timeout_s, on_event, register)
    report = run_dir / "profile.ncu-rep"
    # Kernel replay multiplies run time: give ncu several times the puzzle's limit.
    run_harness(request, run_dir, puzzle.timing.timeout_s * 4, on_event, register,
                wrapper=tuple(ncu.profile_command(binary, report.with_suffix(""))))
    if not report.exists():
        raise TutorError("Nsight Compute wrote no report: it profiled no kernel.",
                         f"See {run_dir / 'output.log'}. Hardware counters may need root "
                         "(ERR_NVGPUCTRPERM), or no kernel ran inside the profiled range.")
    _extracting(on_event, "reading the Nsight Compute report")
    csv_path = run_dir / "ncu.csv"
    ncu.export_csv(binary, report, csv_path)
    return ncu.extract(csv_path), report


def memory_profile(request: dict, run_dir: Path, puzzle: Puzzle, on_event, register) -> tuple[ProfileMetrics, Path]:
    from tutor.profilers.memory_snapshot import extract

    snapshot = run_dir / "memory.pickle"
    request["mode"] = "allocations"
    request["profile"]["snapshot_path"] = str(snapshot)
    outcome = run_harness(request, run_dir, puzzle.timing.timeout_s, on_event, register)
    _extracting(on_event, "reading the allocator's history")
    return extract(snapshot, outcome.result.get("iterations", 0)), snapshot


def nsys_profile(request: dict, run_dir: Path, puzzle: Puzzle, on_event, register) -> tuple[ProfileMetrics, Path]:
    from tutor.profilers import nsys_run, nsys_sqlite

    binary = nsys_run.find_nsys()
    request["mode"] = "timeline"
    # Tracing costs little per call, but nsys starts slowly and writes its report after the run.
    run_harness(request, run_dir, puzzle.timing.timeout_s * 2, on_event, register,
                wrapper=tuple(nsys_run.profile_command(binary, run_dir)))
    _extracting(on_event, "exporting the Nsight Systems report to SQLite")
    exported = nsys_run.export_sqlite(binary, run_dir)
    return nsys_sqlite.extract(exported), nsys_run.report_path(run_dir)


def ptxas_report(request: dict, run_dir: Path, puzzle: Puzzle, on_event, register) -> tuple[ProfileMetrics, Path]:
    """No run: the workload's kernel compiled for the H100's architecture, and ptxas's account of it."""
    from tutor.profilers import ptxas

    [name] = request["prepare"]
    _extracting(on_event, "compiling the kernel with nvcc -Xptxas -v")
    return ptxas.report(Path(request["workloads"][name]), run_dir)
