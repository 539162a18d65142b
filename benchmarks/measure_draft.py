"""Measure a draft puzzle on its GPU before it ships: the baseline graded twice (its profile becomes the
recording), the reference and every alternative puzzle.toml names ten times each.

    INFPROF_DRAFTS=1 PYTHONPATH=/tmp/site:$PWD python3 benchmarks/measure_draft.py PUZZLE $OUT

Each run of benchmarks/grade_stability.py prints the speed-ups per tier comparator and writes its JSON
to $OUT. Then: set the tiers between the classes they show, every honest style clear of its bar;
copy the baseline's metrics.json and trace.json.gz into the puzzle's recordings/; write the numbers
in its MEASUREMENTS.md; remove `draft` from its puzzle.toml.
"""

import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def main(puzzle_id: str, out: Path) -> None:
    os.environ["INFPROF_DRAFTS"] = "1"
    sys.path.insert(0, str(ROOT))
    from tutor.catalog import get_puzzle

    puzzle = get_puzzle(puzzle_id, drafts=True)
    out.mkdir(parents=True, exist_ok=True)
    runs = [("baseline", 2), ("reference", 10), *((f"alternatives/{name}", 10) for name in puzzle.alternatives)]
    for which, count in runs:
        name = which.replace("/", "_")
        subprocess.run([sys.executable, "benchmarks/grade_stability.py", puzzle_id, "--runs", str(count), "--which",
                        which, "--json", str(out / f"{puzzle_id}_{name}.json")], cwd=ROOT, check=False)


if __name__ == "__main__":
    main(sys.argv[1], Path(sys.argv[2]))
