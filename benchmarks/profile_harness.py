"""Where a grade's harness process spends its time, function by function (cProfile).

    python benchmarks/profile_harness.py puzzle2 [--which reference|baseline|alternatives/NAME] [--top 30]
    python benchmarks/profile_harness.py puzzle1 --workers   (the two sides' worker processes instead)

Runs the grade's check request in this process (the same `tutor.harness` code the subprocess
runs), with the reference solution, the baseline or an alternative as `mine`, and prints each stage's seconds
and the functions with the most cumulative time. For finding what makes `grade` slow. The functions are the
coordinator's: the two sides (the puzzle's workloads, and `mine`) run in processes forked from it. With --workers,
each side's worker is profiled instead (tutor.harness.worker.PROFILE_ENV) and its functions printed by their own
time: where a round's asks go (a check of the harness's operators, an input's making, a sync). A worker profiled
runs the harness's watch of its own work unwatched (tutor.harness.foreign_code gives way to another profiler).
"""

from __future__ import annotations

import argparse
import cProfile
import os
import pstats
import shutil
import sys
import tempfile
import time
from pathlib import Path

from tutor import actions
from tutor.catalog import get_puzzle
from tutor.harness.__main__ import run
from tutor.harness.worker import PROFILE_ENV
from tutor.workspace import scratch_workspace


class StageClock:
    """An event sink that keeps each stage's wall time instead of writing events."""

    def __init__(self) -> None:
        self.marks: list[tuple[str, float]] = []

    def stage(self, stage: str, detail: str = "") -> None:
        self.marks.append((f"{stage} {detail}".strip(), time.monotonic()))

    def progress(self, *_) -> None:
        pass

    def emit(self, *_args, **_fields) -> None:
        pass

    def close(self) -> None:  # a forked side forgets the sink; nothing to forget here
        pass


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("puzzle")
    parser.add_argument("--which", default="reference", help="reference, baseline or alternatives/NAME")
    parser.add_argument("--top", type=int, default=30)
    parser.add_argument("--workers", action="store_true", help="profile the worker processes, not the coordinator")
    args = parser.parse_args()
    puzzle = get_puzzle(args.puzzle)
    ws = scratch_workspace("infprof-profile-")
    if args.which != "baseline":
        shutil.copy2(puzzle.solution_path(args.which), ws.editable_path(puzzle, "workload.py"))
    request = actions.check_request(ws, puzzle, ["mine", *dict.fromkeys(t.vs for t in puzzle.tiers)])
    clock, profiler, folder = StageClock(), cProfile.Profile(), Path(tempfile.mkdtemp(prefix="infprof-workers-"))
    if args.workers:
        os.environ[PROFILE_ENV] = str(folder)  # read by each worker forked from here
    start = time.monotonic()
    if not args.workers:
        profiler.enable()
    run(request, clock)
    profiler.disable()
    end = time.monotonic()
    print(f"{args.puzzle}, {args.which} as mine: {end - start:.2f} s in the harness")
    for (name, at), (_, until) in zip(clock.marks, [*clock.marks[1:], ("end", end)]):
        print(f"  {name:40} {until - at:7.2f} s")
    if not args.workers:
        pstats.Stats(profiler).sort_stats("cumulative").print_stats(args.top)
    for stats in sorted(folder.glob("*.prof")):  # the candidate's, then the ruler's
        print(f"\n{stats.stem}: by own time, then by cumulative time")
        pstats.Stats(str(stats)).sort_stats("tottime").print_stats(args.top)
        pstats.Stats(str(stats)).sort_stats("cumulative").print_stats(args.top)
    shutil.rmtree(folder, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
