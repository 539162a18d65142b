"""`diagnose` as a classifier, on the puzzles' recordings (CPU only: the recordings come from Hopper cards).

    python benchmarks/diagnose_accuracy.py [--json OUT]

Every puzzle's recorded baseline (study mode's recordings; puzzle0's CPU recording) must rank first one of the
classes the puzzle accepts; every recorded reference solution (tests/fixtures/PUZZLE_reference_ncu.csv) must not
rank the class its puzzle teaches first. Prints one row a case and, last, `right on N of M baselines`.
"""

from __future__ import annotations

import argparse
import json
import sys
from dataclasses import asdict
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from tutor.catalog import all_puzzles  # noqa: E402
from tutor.diagnose.accuracy import baseline_cases, reference_cases  # noqa: E402

FIXTURES = Path(__file__).resolve().parents[1] / "tests" / "fixtures"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--json", type=Path, help="write every case as JSON here")
    args = parser.parse_args()
    puzzles = list(all_puzzles(drafts=True).values())
    baselines, references = baseline_cases(puzzles), reference_cases(puzzles, FIXTURES)
    print(f"{'puzzle':9} {'profile':16} {'expected':28} {'ranked':36} right")
    for case in baselines + references:
        expected = ("not " if case.profile != "baseline" else "") + "/".join(case.expected)
        print(f"{case.puzzle:9} {case.profile:16} {expected[:28]:28} {', '.join(case.ranked[:3])[:36] or '-':36} "
              f"{'yes' if case.right else 'NO'}")
    if args.json:
        args.json.write_text(json.dumps([asdict(c) | {"right": c.right} for c in baselines + references], indent=1))
    print(f"references: right on {sum(c.right for c in references)} of {len(references)}")
    print(f"right on {sum(c.right for c in baselines)} of {len(baselines)} baselines")


if __name__ == "__main__":
    main()
