"""Measure a draft puzzle on its GPU before it ships: the baseline profiled (its recording), the
reference and every alternative puzzle.toml names graded GRADES times each, then the baseline twice.

    INFPROF_DRAFTS=1 PYTHONPATH=/tmp/site:$PWD python3 benchmarks/measure_draft.py PUZZLE $OUT [GRADES]

GRADES (default 10) is how many times the reference and each alternative are graded. The baseline's
torch profile is written to $OUT as h100_baseline_metrics.json and h100_baseline_trace.json.gz; a
puzzle profiled under Nsight Compute also gets h100_baseline_ncu.csv and, its reference's,
h100_reference_ncu.csv (the CPU tests' fixture of a learner's fixed kernel).

Each run of benchmarks/grade_stability.py prints the speed-ups per tier comparator and writes its JSON
to $OUT. Then: set the tiers between the classes they show, every honest style clear of its bar;
copy those two files into the puzzle's recordings/; write the numbers in its MEASUREMENTS.md; remove
`draft` from its puzzle.toml.
"""

import gzip
import os
import shutil
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def record_baseline(puzzle, out: Path) -> None:
    """The baseline's torch profile, as study mode ships it in recordings/."""
    from tutor import actions
    from tutor.workspace import scratch_workspace

    outcome = actions.profile(scratch_workspace("infprof-draft-"), puzzle, "baseline")
    shutil.copy2(outcome.run_dir / "metrics.json", out / "h100_baseline_metrics.json")
    opener = gzip.open if outcome.trace_path.suffix == ".gz" else open
    with opener(outcome.trace_path, "rb") as src, gzip.open(out / "h100_baseline_trace.json.gz", "wb") as dst:
        shutil.copyfileobj(src, dst)


def record_ncu(puzzle, out: Path) -> None:
    """The baseline's and the reference's Nsight Compute exports, for a kernel puzzle's CPU tests. The
    reference's workload.py alone is put in place: profiling needs no answer, and ready_to_grade would
    profile both under ncu a first time for its [kernel_evidence] table."""
    from tutor import actions
    from tutor.workspace import scratch_workspace

    ws = scratch_workspace("infprof-draft-")
    shutil.copy2(puzzle.solution_dir / "workload.py", ws.editable_path(puzzle, "workload.py"))
    for which, name in (("baseline", "h100_baseline_ncu.csv"), ("mine", "h100_reference_ncu.csv")):
        shutil.copy2(actions.profile(ws, puzzle, which, profiler="ncu").run_dir / "ncu.csv", out / name)


def main(puzzle_id: str, out: Path, grades: int) -> None:
    os.environ["INFPROF_DRAFTS"] = "1"
    sys.path.insert(0, str(ROOT))
    from tutor.catalog import get_puzzle

    puzzle = get_puzzle(puzzle_id, drafts=True)
    out.mkdir(parents=True, exist_ok=True)
    record_baseline(puzzle, out)
    if "ncu" in puzzle.profilers:
        record_ncu(puzzle, out)
    # The baseline last: that it earns no tier matters least, and a run stopped at its limit keeps the rest.
    runs = [("reference", grades), *((f"alternatives/{name}", grades) for name in puzzle.alternatives), ("baseline", 2)]
    for which, count in runs:
        name = which.replace("/", "_")
        subprocess.run([sys.executable, "benchmarks/grade_stability.py", puzzle_id, "--runs", str(count), "--which",
                        which, "--json", str(out / f"{puzzle_id}_{name}.json")], cwd=ROOT, check=False)


if __name__ == "__main__":
    main(sys.argv[1], Path(sys.argv[2]), int(sys.argv[3]) if len(sys.argv) > 3 else 10)
