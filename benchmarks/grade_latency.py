"""Wall time of `grade` and of a quick check per runnable puzzle, split by stage, cold and warm.

    python benchmarks/grade_latency.py [puzzle ...] [--runs 3] [--which reference|baseline]
                                       [--workload FILE [--compile-mode MODE]] [--warm | --cold]
                                       [--json out.json]

Without puzzle ids: puzzle0 (CPU) and puzzle1 when this machine can run it (tutor.machine).
`--warm` starts a warm harness first (tutor.warm; its start is printed, not counted) and every run
must fork from it; `--cold` (the default) starts each run as a fresh Python, as without one. The
baseline is profiled once first so the diagnosis has a profile to check. A stage lasts from its
event to the next stage's: `spawn` is from calling grade() to the harness's first event (process
start or fork, Python's imports), `importing` is torch's import, `timing` runs until the tutor
starts `grading` (so it includes the harness's exit), and `grading` is the tutor's own work after
that (diagnosis, the db write). A serving grade's replays are summed by side, its warm-up pair apart.
The second and later grades of unchanged code find torch.compile's and triton's caches in the workspace
(tutor.harness.worker.use_compile_caches).

--workload FILE grades FILE (a path in the puzzle's folder, or any path) as the learner's workload.py,
with the reference's answer; --compile-mode MODE first swaps its torch.compile mode for MODE. Issue
17's slow grade is puzzle1's `--workload alternatives/compiled_fp8_gemv.py --compile-mode
max-autotune-no-cudagraphs`: its first grade autotunes for minutes, and the second must find the
workspace's caches and not autotune again.

--watch (with --warm) first times a watch session's checks, before the grades: its first, which prepares the
comparators the session's ruler keeper (tutor.harness.keeper) keeps, then `--runs` more back to back, as saves
make them (a grade, or any other run on the GPU, ends the kept ruler).

--json writes, per puzzle, {"stages": {name: median seconds}, "grade_s": median, "quick_check_s": median (None
for a serving puzzle, which has no quick check), "warm": bool, "grades": [...], "quick_checks": [...]} (with
--watch also "kept_check_s" and "kept_checks"): the object itself for one puzzle, else {puzzle: object}.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import statistics
import sys
import time
from pathlib import Path

from tutor import actions
from tutor.catalog import get_puzzle
from tutor.machine import readiness
from tutor.quick_check import quick_check
from tutor.reference import ready_to_grade
from tutor.warm import RulerKeeper, WarmHarness
from tutor.workspace import scratch_workspace

DEFAULT_PUZZLES = ("puzzle0", "puzzle1")


def stage_row(stage: str, detail: str) -> str:
    """The row a stage's seconds are summed in: preparing by what is prepared; a serving grade's replays by side,
    its warm-up pair apart (where a serving grade's time goes: the puzzle's server against yours)."""
    if stage == "preparing":
        return f"preparing {detail}"
    if stage == "replaying":
        return f"replaying, {detail.split(':')[0]}{' (warm-up)' if 'warm-up' in detail else ''}"
    return stage


def timed(run, echo: bool = False) -> tuple[dict[str, float], object]:
    """Seconds per stage of `run(on_event)`, in the order the stages began; and what it returned. With
    `echo`, each stage is printed to stderr as it begins: a run cut by a time limit still says where it was."""
    marks: list[tuple[str, float]] = []

    def on_event(event: dict) -> None:
        if event["type"] != "stage":
            return
        name = stage_row(event["stage"], event.get("detail", ""))
        if not marks or marks[-1][0] != name:
            marks.append((name, time.monotonic()))
            if echo:
                print(f"  [+{marks[-1][1] - start:6.1f} s] {name}", file=sys.stderr, flush=True)

    start = time.monotonic()
    outcome = run(on_event)
    end = time.monotonic()
    stages = {"spawn": marks[0][1] - start if marks else end - start}
    for (name, at), (_, until) in zip(marks, [*marks[1:], ("end", end)]):
        stages[name] = stages.get(name, 0.0) + until - at
    stages["total"] = end - start
    return stages, outcome


def print_stages(title: str, runs: list[dict[str, float]]) -> None:
    names = list(dict.fromkeys(name for run in runs for name in run))
    total = statistics.median(run["total"] for run in runs)
    print(title)
    print(f"  {'stage':28} {'median':>7} {'min':>7} {'max':>7} {'share':>6}")
    for name in names:
        values = [run.get(name, 0.0) for run in runs]
        mid = statistics.median(values)
        share = f"{mid / total:6.1%}" if name != "total" else ""
        print(f"  {name:28} {mid:7.3f} {min(values):7.3f} {max(values):7.3f} {share}")
    print(flush=True)


def start_warm() -> None:
    harness = WarmHarness.for_env()
    t0 = time.monotonic()
    harness.start(owner=os.getpid())
    if not harness.wait_ready(timeout_s=600, owner=os.getpid()):
        sys.exit(f"the warm harness did not start: {harness.log_path.read_text()[-2000:]}")
    print(f"warm harness ready in {time.monotonic() - t0:.1f} s (not counted): "
          f"{', '.join(harness.ask('status')['preloaded'])}\n", flush=True)


def measure(puzzle_id: str, args) -> dict | None:
    puzzle = get_puzzle(puzzle_id)
    ready = readiness(puzzle)
    if not ready.ok:
        print(f"{puzzle_id}: skipped ({ready.label}: {ready.why})\n", flush=True)
        return None
    ws = scratch_workspace("infprof-latency-")
    t0 = time.monotonic()
    ready_to_grade(ws, puzzle, args.which)
    if args.workload:  # a learner's workload.py of another style, graded with the reference's answer
        source = (puzzle.folder / args.workload).read_text()
        if args.compile_mode:
            source, swapped = re.subn(r'mode="[a-z-]+"', f'mode="{args.compile_mode}"', source)
            if not swapped:
                raise SystemExit(f"{args.workload} has no torch.compile mode to swap")
        ws.editable_path(puzzle, "workload.py").write_text(source)
    print(f"{puzzle_id}: profile baseline (and install the reference) {time.monotonic() - t0:.1f} s "
          "(not counted)", flush=True)
    grades, checks, kept = [], [], []
    keeper = start_keeper(ws, puzzle) if args.watch and not puzzle.no_quick_check else None
    if keeper:  # the session's first check prepares the ruler it keeps: what watch mode's first save costs
        stages, checked = timed(lambda on_event: quick_check(ws, puzzle, on_event, keeper=keeper))
        print(f"  a watch session's first check: {stages['total']:.2f} s, kept={checked.kept_ruler}", flush=True)
        # Then its later saves' checks, back to back: a grade or any other run on the GPU ends the kept ruler
        # (tutor.warm.release_kept_rulers), so a check timed after one would make its comparators again.
        for i in range(args.runs):
            stages, checked = timed(lambda on_event: quick_check(ws, puzzle, on_event, keeper=keeper))
            if not checked.kept_ruler:
                sys.exit(f"the keeper did not answer: {keeper.log_path.read_text()[-2000:]}")
            kept.append(stages)
            print(f"  kept-ruler check {i + 1}: {stages['total']:.2f} s, correct={checked.correct}", flush=True)
    for i in range(args.runs):
        stages, verdict = timed(lambda on_event: actions.grade(ws, puzzle, on_event))
        grades.append(stages)
        print(f"  grade {i + 1}: {stages['total']:.2f} s, tier={verdict.tier or 'none'}", flush=True)
        if puzzle.no_quick_check:
            continue  # a serving puzzle's server is judged over whole replays
        stages, checked = timed(lambda on_event: quick_check(ws, puzzle, on_event))
        checks.append(stages)
        print(f"  quick check {i + 1}: {stages['total']:.2f} s, correct={checked.correct}", flush=True)
    how = "warm" if args.warm else "cold"
    what = f"{args.workload} {args.compile_mode or ''}".strip() if args.workload else args.which
    print_stages(f"{puzzle_id} ({puzzle.hardware.device}), {what}, {how}, {len(grades)} grades: seconds per stage",
                 grades)
    if checks:
        print_stages(f"{puzzle_id}, {how}, {len(checks)} quick checks: seconds per stage", checks)
    if keeper:
        print_stages(f"{puzzle_id}, {len(kept)} quick checks of a watch session, its ruler kept: seconds per stage",
                     kept)
        keeper.stop()
    names = list(dict.fromkeys(name for run in grades for name in run))
    report = {"stages": {n: statistics.median(run.get(n, 0.0) for run in grades) for n in names},
              "grade_s": statistics.median(run["total"] for run in grades),
              "quick_check_s": statistics.median(run["total"] for run in checks) if checks else None,
              "warm": args.warm, "grades": grades, "quick_checks": checks}
    if keeper:
        report.update(kept_check_s=statistics.median(run["total"] for run in kept), kept_checks=kept)
    return report


def start_keeper(ws, puzzle) -> RulerKeeper:
    """A watch session's ruler keeper for `puzzle`, ready (its start not counted)."""
    keeper = RulerKeeper.for_puzzle(ws.root, puzzle.id)
    t0 = time.monotonic()
    keeper.start(owner=os.getpid())
    if not keeper.wait_ready(timeout_s=600, owner=os.getpid()):
        sys.exit(f"the ruler keeper did not start: {keeper.log_path.read_text()[-2000:]}")
    print(f"  ruler keeper ready in {time.monotonic() - t0:.1f} s (not counted)", flush=True)
    return keeper


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("puzzles", nargs="*")
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--which", choices=["reference", "baseline"], default="reference")
    parser.add_argument("--workload", type=Path, help="a workload.py to grade instead of the reference's")
    parser.add_argument("--compile-mode", help="with --workload: its torch.compile mode swapped for this one")
    how = parser.add_mutually_exclusive_group()
    how.add_argument("--warm", action="store_true", help="every run forks from a warm harness")
    how.add_argument("--cold", action="store_true", help="every run is a fresh Python (the default)")
    parser.add_argument("--watch", action="store_true",
                        help="with --warm: also time each quick check as a watch session's, its ruler kept")
    parser.add_argument("--json", type=Path)
    args = parser.parse_args()
    if args.watch and not args.warm:
        parser.error("--watch needs --warm: a watch session's checks run warm")
    os.environ["INFPROF_WARM"] = "require" if args.warm else "0"
    if args.warm:
        start_warm()
    report = {p: r for p in (args.puzzles or DEFAULT_PUZZLES) if (r := measure(p, args)) is not None}
    if args.json:
        args.json.write_text(json.dumps(next(iter(report.values())) if len(report) == 1 else report, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
