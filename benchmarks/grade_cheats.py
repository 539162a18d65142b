"""Grade each of a puzzle's cheats (cheats/NAME.py) as the learner's workload and print what it earned.

    python benchmarks/grade_cheats.py puzzle4 [puzzle5 ...] [--runs 3] [--json out.json]
    python benchmarks/grade_cheats.py puzzle4 --which reference alternatives/compiled_chunks   (any solution)

No profile is taken: a cheat's answer would name the right bottleneck anyway, so what matters is whether the
grade's other criteria refuse it. The tier printed is the one it earns with them (withheld when correctness, fair
play or the physical floor fails), as a right diagnosis would leave it. Each grade is a fresh workspace and seed.
"""

from __future__ import annotations

import argparse
import json
import shutil

from tutor import actions
from tutor.catalog import get_puzzle
from tutor.workspace import scratch_workspace


def grade_one(puzzle, path, which: str) -> dict:
    ws = scratch_workspace("infprof-cheat-")
    shutil.copy(path, ws.editable_path(puzzle, "workload.py"))
    verdict = actions.grade(ws, puzzle)
    by_name = {c.name: c for c in verdict.criteria}
    refused = [f"{c.name}: {c.summary} {' | '.join(c.details[:4])}" for c in verdict.criteria
               if not c.passed and c.name != "diagnosis"]
    return {"puzzle": puzzle.id, "which": which, "tier": verdict.tier,
            "refused_by": refused, "performance": by_name["performance"].details[:4],
            "speedups": {k: round(v["median"], 3) for k, v in verdict.speedups.items()}}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("puzzles", nargs="+")
    parser.add_argument("--runs", type=int, default=1)
    parser.add_argument("--json")
    parser.add_argument("--which", nargs="*", help="solutions to grade instead of the cheats: reference, alternatives/NAME")
    args = parser.parse_args()
    rows = []
    for puzzle_id in args.puzzles:
        puzzle = get_puzzle(puzzle_id)
        chosen = args.which or [f"cheats/{p.stem}" for p in sorted(puzzle.folder.glob("cheats/*.py"))]
        for which in chosen:
            for run in range(args.runs):
                row = grade_one(puzzle, puzzle.solution_path(which), which)
                rows.append({**row, "run": run + 1})
                print(f"{row['which']} ({puzzle_id}, grade {run + 1}): tier {row['tier'] or '-'}; speed-ups "
                      f"{row['speedups']}", flush=True)
                for line in row["refused_by"]:
                    print(f"    refused by {line[:400]}", flush=True)
                if args.json:  # after every grade: a run stopped by a time limit keeps what it graded
                    with open(args.json, "w") as f:
                        json.dump(rows, f, indent=1)


if __name__ == "__main__":
    main()
