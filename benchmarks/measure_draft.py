"""Measure a draft puzzle on its GPU before it ships: the baseline profiled (its recording), the
reference and every alternative puzzle.toml names graded GRADES times each, then the baseline twice.

    INFPROF_DRAFTS=1 PYTHONPATH=/tmp/site:$PWD python3 benchmarks/measure_draft.py PUZZLE $OUT [GRADES]
        [--no-recordings | --recordings-only] [--which reference,alternatives/NAME=3]

GRADES (default 10) is how many times the reference and each alternative are graded; in --which, NAME=N grades
that one N times instead. Run every solution a call grades in one invocation: they share one workspace, so each
CUDA extension is compiled once (a workspace of its own costs a grade a minute's compile and a profile). The baseline's
torch profile is written to $OUT as baseline_metrics.json and baseline_trace.json.gz, and the recording of each
other profiler it lists that study mode ships (tutor.profilers.registry's `recording`: baseline_ncu.csv,
baseline_memory_metrics.json); a puzzle whose kernels are explained ([kernel_evidence]'s profiler) also gets its
reference's export, reference_ncu.csv (the CPU tests' fixture of a learner's fixed kernel).

Each run of benchmarks/grade_stability.py prints the speed-ups per tier comparator and writes its JSON
to $OUT. Then: set the tiers between the classes they show, every honest style clear of its bar;
put the recordings where they ship (benchmarks/install_recordings.py); write the numbers in its
MEASUREMENTS.md; remove `draft` from its puzzle.toml.
"""

import argparse
import gzip
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def record_baseline(ws, puzzle, out: Path) -> None:
    """The baseline's profile by every profiler it lists whose recording study mode ships in recordings/: the
    torch profile's metrics and its trace, then each other's."""
    from tutor import actions
    from tutor.profilers.registry import PROFILERS

    outcome = actions.profile(ws, puzzle, "baseline")
    shutil.copy2(outcome.run_dir / "metrics.json", out / "baseline_metrics.json")
    opener = gzip.open if outcome.trace_path.suffix == ".gz" else open
    with opener(outcome.trace_path, "rb") as src, gzip.open(out / "baseline_trace.json.gz", "wb") as dst:
        shutil.copyfileobj(src, dst)
    for profiler in puzzle.profilers:
        recording = PROFILERS[profiler].recording
        if profiler != "torch" and recording:
            shutil.copy2(actions.profile(ws, puzzle, "baseline", profiler=profiler).run_dir / recording.kept,
                         out / recording.name)


def record_stages(ws, puzzle, out: Path) -> None:
    """A capstone's later stages: the torch profile of the file that shows each ([[stages]] shown_by), run as the
    learner's workload, as stage<N>_metrics.json (dev check credits the reference answer's stage on it)."""
    from tutor.reference import stage_metrics

    for number, stage in enumerate(puzzle.stages, start=2):
        if stage.shown_by:
            stage_metrics(ws, puzzle, stage).save(out / puzzle.recorded_stage(number).name)


def record_kernel_evidence(ws, puzzle, out: Path) -> None:
    """The reference's export by the profiler that explains kernels (Nsight Compute), for a kernel puzzle's CPU
    tests. The reference's workload.py alone is put in place: profiling needs no answer, and ready_to_grade would
    profile both a first time for its [kernel_evidence] table."""
    from tutor import actions
    from tutor.profilers.registry import KERNEL_PROFILER

    shutil.copy2(puzzle.solution_dir / "workload.py", ws.editable_path(puzzle, "workload.py"))
    kept = KERNEL_PROFILER.recording.kept
    shutil.copy2(actions.profile(ws, puzzle, "mine", profiler=KERNEL_PROFILER.id).run_dir / kept,
                 out / f"reference_{kept}")


def planned_runs(puzzle, grades: int, which: str) -> list[tuple[str, int]]:
    """(solution, grades) in the order graded: `which`'s (NAME or NAME=GRADES, comma-separated), or every one."""
    if which:
        parts = (w.partition("=") for w in which.split(","))
        runs = [(name, int(count) if count else grades) for name, _, count in parts]
        # Checked before anything runs: a name the puzzle does not list would fail only when its turn came, the
        # device time before it spent.
        known = {"reference", "baseline", *(f"alternatives/{name}" for name in puzzle.alternatives)}
        unknown = [name for name, _ in runs if name not in known]
        if unknown:
            raise SystemExit(f"{puzzle.id} lists no {', '.join(unknown)}: --which takes {', '.join(sorted(known))} "
                             "(an alternative is graded once puzzle.toml's [alternatives] names its tier)")
        return runs
    # The baseline last: that it earns no tier matters least, and a run stopped at its limit keeps the rest.
    return [("reference", grades), *((f"alternatives/{name}", grades) for name in puzzle.alternatives), ("baseline", 2)]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("puzzle")
    parser.add_argument("out", type=Path)
    parser.add_argument("grades", type=int, nargs="?", default=10)
    parser.add_argument("--no-recordings", action="store_true", help="grade only: the recordings are in hand")
    parser.add_argument("--recordings-only", action="store_true", help="record only: the grades are in hand")
    parser.add_argument("--which", default="", help="comma-separated solutions to grade, each NAME or NAME=GRADES "
                        "(default: all, baseline last)")
    args = parser.parse_args()
    os.environ["INFPROF_DRAFTS"] = "1"
    sys.path.insert(0, str(ROOT))
    from tutor.catalog import get_puzzle
    from tutor.profilers.registry import KERNEL_PROFILER
    from tutor.workspace import scratch_workspace

    puzzle = get_puzzle(args.puzzle, drafts=True)
    args.out.mkdir(parents=True, exist_ok=True)
    # One workspace for every run: its compile caches build each CUDA extension once, not once a run (a workspace
    # a grade spent 2 of every 4 minutes compiling the same kernels again).
    ws = scratch_workspace("infprof-draft-")
    started = time.monotonic()
    if not args.no_recordings:
        record_baseline(ws, puzzle, args.out)
        record_stages(ws, puzzle, args.out)
        if KERNEL_PROFILER.id in puzzle.profilers:
            record_kernel_evidence(ws, puzzle, args.out)
        print(f"recordings: {time.monotonic() - started:.1f} s", flush=True)
    if args.recordings_only:
        return
    for which, count in planned_runs(puzzle, args.grades, args.which):
        name = which.replace("/", "_")
        subprocess.run([sys.executable, "benchmarks/grade_stability.py", args.puzzle, "--runs", str(count), "--which",
                        which, "--json", str(args.out / f"{args.puzzle}_{name}.json"), "--workspace", str(ws.root)],
                       cwd=ROOT, check=False)


if __name__ == "__main__":
    main()
