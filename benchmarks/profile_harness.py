"""Where a grade's harness process spends its time, function by function (cProfile).

    python benchmarks/profile_harness.py puzzle2 [--which reference|baseline|alternatives/NAME] [--top 30]

Runs the grade's check request in this process (the same `tutor.harness` code the subprocess
runs), with the reference solution, the baseline or an alternative as `mine`, and prints each stage's seconds
and the functions with the most cumulative time. For finding what makes `grade` slow. The functions are the
coordinator's: the two sides (the puzzle's workloads, and `mine`) run in processes forked from it.
"""

from __future__ import annotations

import argparse
import cProfile
import pstats
import shutil
import sys
import time

from tutor import actions
from tutor.catalog import get_puzzle
from tutor.harness.__main__ import run
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
    args = parser.parse_args()
    puzzle = get_puzzle(args.puzzle)
    ws = scratch_workspace("infprof-profile-")
    if args.which != "baseline":
        shutil.copy2(puzzle.solution_path(args.which), ws.editable_path(puzzle, "workload.py"))
    request = actions.check_request(ws, puzzle, ["mine", *dict.fromkeys(t.vs for t in puzzle.tiers)])
    clock = StageClock()
    profiler = cProfile.Profile()
    start = time.monotonic()
    profiler.enable()
    run(request, clock)
    profiler.disable()
    end = time.monotonic()
    print(f"{args.puzzle}, {args.which} as mine: {end - start:.2f} s in the harness")
    for (name, at), (_, until) in zip(clock.marks, [*clock.marks[1:], ("end", end)]):
        print(f"  {name:40} {until - at:7.2f} s")
    pstats.Stats(profiler).sort_stats("cumulative").print_stats(args.top)
    return 0


if __name__ == "__main__":
    sys.exit(main())
