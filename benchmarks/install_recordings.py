"""Put the recordings a device call made (measure_draft.py PUZZLE OUT/PUZZLE ...) where they ship.

    python benchmarks/install_recordings.py RESULTS PUZZLE [PUZZLE...] [--card "an H100 (80 GB HBM3), ..."]

RESULTS is a device call's unpacked results (a folder per puzzle, as `measure_draft.py PUZZLE OUT/PUZZLE` writes
them). For each puzzle: the baseline's torch metrics and trace and, for a kernel puzzle, its Nsight Compute
export go to the puzzle's recordings/, and so does a capstone's profile of each later stage
(stageN_metrics.json); the reference's export becomes tests/fixtures/h100_PUZZLE_reference_ncu.csv
(conftest.reference_ncu prefers it to an H200's; h200_PUZZLE_... where --card names an H200). recorded_on.txt,
which names another card, is removed: the recordings are the H100's now, as study mode says by default. Pass
--card to name another card instead.
Prints what it copied; then run the puzzle's tests, whose figures may move with the card.
"""

from __future__ import annotations

import argparse
import shutil
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
BASELINE = ("baseline_metrics.json", "baseline_trace.json.gz", "baseline_ncu.csv")


def install(results: Path, puzzle: str, card: str | None, root: Path = ROOT) -> list[str]:
    found, recordings = results / puzzle, root / "challenges" / puzzle / "recordings"
    if not (found / BASELINE[0]).is_file():
        raise SystemExit(f"{found} has no {BASELINE[0]}: did the call record {puzzle}'s baseline?")
    recordings.mkdir(exist_ok=True)  # a draft's first recordings
    done = []
    # A capstone's later stages: the profile of the fix that shows each (measure_draft.py's record_stages).
    stages = sorted(path.name for path in found.glob("stage*_metrics.json"))
    for name in (*BASELINE, *stages):
        if (found / name).is_file():
            shutil.copy2(found / name, recordings / name)
            done.append(f"{puzzle}/recordings/{name}")
    if (found / "h100_reference_ncu.csv").is_file():
        # measure_draft.py names its files h100_ on any card; the fixture names the card (conftest.reference_ncu).
        card_prefix = "h200" if card and "H200" in card else "h100"
        fixture = root / "tests" / "fixtures" / f"{card_prefix}_{puzzle}_reference_ncu.csv"
        shutil.copy2(found / "h100_reference_ncu.csv", fixture)
        done.append(f"tests/fixtures/{fixture.name}")
    named = recordings / "recorded_on.txt"
    if card:
        named.write_text(card + "\n")
        done.append(f"{puzzle}/recordings/recorded_on.txt: {card}")
    elif named.is_file():
        named.unlink()
        done.append(f"{puzzle}/recordings/recorded_on.txt removed: the H100's")
    return done


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("results", type=Path)
    parser.add_argument("puzzles", nargs="+")
    parser.add_argument("--card", help="the card the recordings came from, if not an H100")
    args = parser.parse_args()
    for puzzle in args.puzzles:
        print("\n".join(install(args.results, puzzle, args.card)))


if __name__ == "__main__":
    main()
