"""A puzzle's H100 grades as a test fixture: grade_stability.py's JSON files (one per solution, as
measure_draft.py writes them) reduced to what tests/test_grading_rules.py reads under today's bars.

    python benchmarks/grades_fixture.py PUZZLE CALL FILE... > tests/fixtures/h100_grades_PUZZLE_DATE.json

CALL names the device call the grades came from (MEASUREMENTS.md says which). A file's name says which
solution it graded (PUZZLE_reference.json, PUZZLE_alternatives_NAME.json); the baseline's own grades
are left out (no tier is expected of it).
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

VERDICT_CRITERIA = {"correctness", "diagnosis", "performance"}


def which_of(path: Path, puzzle: str) -> str:
    name = path.stem.removeprefix(f"{puzzle}_")
    return "alternatives/" + name.removeprefix("alternatives_") if name.startswith("alternatives_") else name


def rounded(speedups: dict) -> dict:
    return {clock: {vs: {k: round(v, 4) if isinstance(v, float) else v for k, v in e.items()} for vs, e in by_vs.items()}
            for clock, by_vs in speedups.items()}


def rows(puzzle: str, call: str, path: Path) -> list[dict]:
    which = which_of(path, puzzle)
    if which == "baseline":
        return []
    return [{"puzzle": puzzle, "which": which, "call": call, "run": g["run"], "rounds": g["rounds"],
             "tier_then": g["tier"], "speedups": rounded(g["speedups"]),
             # A grader's own rules (puzzle1's fp8 weights): the speed-ups alone do not earn a tier without them.
             "rules_passed": all(ok for name, ok in g["criteria"].items() if name not in VERDICT_CRITERIA),
             "mine_gpu_clock": g["clocks"].get("mine", {}).get("method", "")}
            for g in json.loads(path.read_text())]


def main(puzzle: str, call: str, paths: list[str]) -> None:
    found = [row for p in paths for row in rows(puzzle, call, Path(p))]
    print("[\n" + ",\n".join(json.dumps(r) for r in found) + "\n]")


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2], sys.argv[3:])
