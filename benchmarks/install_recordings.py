"""Put the recordings a device call made (measure_draft.py PUZZLE OUT/PUZZLE ...) where they ship.

    python benchmarks/install_recordings.py RESULTS PUZZLE [PUZZLE...] --card "an H100 (80 GB HBM3), ..."

RESULTS is a device call's unpacked results (a folder per puzzle, as `measure_draft.py PUZZLE OUT/PUZZLE` writes
them). For each puzzle: the baseline's recording by each profiler study mode ships (tutor.profilers.registry) and
the torch trace go to the puzzle's recordings/, and so does a capstone's profile of each later stage
(stageN_metrics.json); the reference's Nsight Compute export becomes tests/fixtures/PUZZLE_reference_ncu.csv (its
Device column names the card). recordings/recorded_on.txt names the card and software, as study mode says them.
Prints what it copied; then run the puzzle's tests, whose figures may move with the card.
"""

from __future__ import annotations

import argparse
import shutil
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
TRACE = "baseline_trace.json.gz"


def recorded_files() -> list[str]:
    """What measure_draft.py records of a baseline, by the registry: each profiler's recording, the torch trace."""
    sys.path.insert(0, str(ROOT))
    from tutor.profilers.registry import PROFILERS

    return [p.recording.name for p in PROFILERS.values() if p.recording] + [TRACE]


def install(results: Path, puzzle: str, card: str, root: Path = ROOT) -> list[str]:
    found, recordings = results / puzzle, root / "challenges" / puzzle / "recordings"
    wanted = recorded_files()
    if not (found / wanted[0]).is_file():
        raise SystemExit(f"{found} has no {wanted[0]}: did the call record {puzzle}'s baseline?")
    recordings.mkdir(exist_ok=True)  # a draft's first recordings
    done = []
    # A capstone's later stages: the profile of the fix that shows each (measure_draft.py's record_stages).
    stages = sorted(path.name for path in found.glob("stage*_metrics.json"))
    for name in (*wanted, *stages):
        if (found / name).is_file():
            shutil.copy2(found / name, recordings / name)
            done.append(f"{puzzle}/recordings/{name}")
    if (found / "reference_ncu.csv").is_file():
        fixture = root / "tests" / "fixtures" / f"{puzzle}_reference_ncu.csv"
        shutil.copy2(found / "reference_ncu.csv", fixture)
        done.append(f"tests/fixtures/{fixture.name}")
    (recordings / "recorded_on.txt").write_text(card + "\n")
    done.append(f"{puzzle}/recordings/recorded_on.txt: {card}")
    return done


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("results", type=Path)
    parser.add_argument("puzzles", nargs="+")
    parser.add_argument("--card", required=True, help='the card and software, as study mode says them: '
                        '"an H100 (80 GB HBM3), torch 2.11 with CUDA 13.0"')
    args = parser.parse_args()
    for puzzle in args.puzzles:
        print("\n".join(install(args.results, puzzle, args.card)))


if __name__ == "__main__":
    main()
