"""GPU memory of each of a puzzle's workloads, each alone in a fresh harness process serving every warm-up input twice.

    python benchmarks/memory_run.py puzzle2 [--json out.json]

The memory figures a grade reads in the learner's own process, here for the baseline, the
comparators, the reference solution and the honest alternatives: what graders/puzzle2.py's
rules were set from, and the recorded fixture for its CPU tests.
"""

from __future__ import annotations

import argparse
import json
import random
import tempfile
from pathlib import Path

from tutor.catalog import get_puzzle
from tutor.runner import run_harness


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("puzzle")
    parser.add_argument("--json", type=Path)
    args = parser.parse_args()
    puzzle = get_puzzle(args.puzzle)
    files = {name: puzzle.workload_path(name) for name in puzzle.workloads}
    files["reference"] = puzzle.solution_path()
    files.update({f"alternatives/{name}": puzzle.alternative_path(name) for name in puzzle.alternatives})
    out = {}
    for name, path in files.items():
        request = {"mode": "memory", "device": puzzle.hardware.device, "seed": random.randrange(2**31),
                   "spec": str(puzzle.folder / "spec.py"), "workloads": {"mine": str(path)}, "prepare": ["mine"],
                   "timing": {"warmup": puzzle.timing.warmup, "rounds": puzzle.timing.rounds}}
        run_dir = Path(tempfile.mkdtemp(prefix=f"infprof-memory-{name.replace('/', '-')}-"))
        out[name] = run_harness(request, run_dir, puzzle.timing.timeout_s).result["memory"]
        print(name, json.dumps(out[name]), flush=True)
    if args.json:
        args.json.write_text(json.dumps(out, indent=1) + "\n")


if __name__ == "__main__":
    main()
