"""Wall time of `grade` per runnable puzzle, split by stage, from the harness's own stage events.

    python benchmarks/grade_latency.py [puzzle ...] [--runs 3] [--which reference|baseline] [--json out.json]

Without puzzle ids: puzzle0 (CPU) and puzzle1 when this machine can run it (tutor.machine).
Each grade is a fresh harness process, as a learner's is; the baseline is profiled once first
so the diagnosis has a profile to check. A stage lasts from its event to the next stage's:
`spawn` is from calling grade() to the harness's first event (process start, Python's imports),
`importing` is torch's import, `timing` runs until the tutor starts `grading` (so it includes the
harness's exit), and `grading` is the tutor's own work after that (diagnosis, the db write).
A memory run (puzzle2) is a second harness process: its stages are prefixed `memory run`.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import tempfile
import time
from pathlib import Path

from tutor import actions
from tutor.catalog import get_puzzle
from tutor.grading.verdict import Verdict
from tutor.machine import readiness
from tutor.reference import ready_to_grade
from tutor.workspace import init_workspace

DEFAULT_PUZZLES = ("puzzle0", "puzzle1")


def timed_grade(ws, puzzle) -> tuple[dict[str, float], Verdict]:
    """Seconds per stage of one grade, in the order the stages began; and its verdict."""
    marks: list[tuple[str, float]] = []
    prefix = ""

    def on_event(event: dict) -> None:
        nonlocal prefix
        if event["type"] != "stage":
            return
        stage = event["stage"]
        if stage == "importing" and any(name.endswith("importing") for name, _ in marks):
            prefix = "memory run "  # a second harness process
        name = f"{stage} {event.get('detail', '')}" if stage == "preparing" else stage
        if not marks or marks[-1][0] != prefix + name:
            marks.append((prefix + name, time.monotonic()))

    start = time.monotonic()
    verdict = actions.grade(ws, puzzle, on_event)
    end = time.monotonic()
    stages = {"spawn": marks[0][1] - start if marks else end - start}
    for (name, at), (_, until) in zip(marks, [*marks[1:], ("end", end)]):
        stages[name] = stages.get(name, 0.0) + until - at
    stages["total"] = end - start
    return stages, verdict


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("puzzles", nargs="*")
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--which", choices=["reference", "baseline"], default="reference")
    parser.add_argument("--json", type=Path)
    args = parser.parse_args()
    report = {}
    for puzzle_id in args.puzzles or DEFAULT_PUZZLES:
        puzzle = get_puzzle(puzzle_id)
        ready = readiness(puzzle)
        if not ready.ok:
            print(f"{puzzle_id}: skipped ({ready.label}: {ready.why})\n", flush=True)
            continue
        ws = init_workspace(Path(tempfile.mkdtemp(prefix="infprof-latency-")) / "ws")
        t0 = time.monotonic()
        ready_to_grade(ws, puzzle, args.which)
        print(f"{puzzle_id}: profile baseline (and install the reference) {time.monotonic() - t0:.1f} s "
              "(not counted)", flush=True)
        runs = []
        for i in range(args.runs):
            stages, verdict = timed_grade(ws, puzzle)
            runs.append(stages)
            print(f"  grade {i + 1}: {stages['total']:.2f} s, passed={verdict.passed}", flush=True)
        names = list(dict.fromkeys(name for run in runs for name in run))
        total = statistics.median(run["total"] for run in runs)
        print(f"{puzzle_id} ({puzzle.hardware.device}), {args.which}, {len(runs)} grades: seconds per stage")
        print(f"  {'stage':28} {'median':>7} {'min':>7} {'max':>7} {'share':>6}")
        for name in names:
            values = [run.get(name, 0.0) for run in runs]
            mid = statistics.median(values)
            share = f"{mid / total:6.1%}" if name != "total" else ""
            print(f"  {name:28} {mid:7.3f} {min(values):7.3f} {max(values):7.3f} {share}")
        print(flush=True)
        report[puzzle_id] = runs
    if args.json:
        args.json.write_text(json.dumps(report, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
