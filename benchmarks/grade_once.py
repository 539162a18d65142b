"""Grade one workload (reference, baseline or alternatives/NAME) once and print every criterion in full.

    python benchmarks/grade_once.py puzzle1 alternatives/compiled_fp8_gemv
"""

from __future__ import annotations

import argparse

from tutor import actions
from tutor.catalog import get_puzzle
from tutor.reference import ready_to_grade
from tutor.workspace import scratch_workspace


def main(puzzle_id: str, which: str = "reference") -> None:
    ws = scratch_workspace("infprof-once-")
    puzzle = get_puzzle(puzzle_id)
    ready_to_grade(ws, puzzle, which)
    verdict = actions.grade(ws, puzzle)
    print(f"{puzzle_id} {which}: tier {verdict.tier or '-'}, passed {verdict.passed}")
    for c in verdict.criteria:
        print(f"  {c.name}: {'pass' if c.passed else 'FAIL'}: {c.summary}")
        for line in c.details:
            print(f"      {line}")


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("puzzle")
    parser.add_argument("which", nargs="?", default="reference", help="reference, baseline or alternatives/NAME")
    args = parser.parse_args()
    main(args.puzzle, args.which)
