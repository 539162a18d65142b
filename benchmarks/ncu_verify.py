"""Profile a puzzle's baseline and reference under Nsight Compute through the tutor, and keep the CSVs.

    python benchmarks/ncu_verify.py puzzle1 [--out DIR]

Prints the top kernels and the `ncu.*` metrics a learner would cite; copies each run's
ncu.csv to DIR (fixtures for the CPU tests of tutor/profilers/ncu.py).
"""

from __future__ import annotations

import argparse
import shutil
import sys
import time
from pathlib import Path

from tutor import actions
from tutor.catalog import get_puzzle
from tutor.metrics import ProfileMetrics
from tutor.progress import Progress
from tutor.reference import ready_to_grade
from tutor.workspace import scratch_workspace


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("puzzle")
    parser.add_argument("--out", type=Path, default=Path("."))
    args = parser.parse_args()
    puzzle = get_puzzle(args.puzzle)
    ws = scratch_workspace("infprof-ncu-")
    ready_to_grade(ws, puzzle)
    for which in ("baseline", "mine"):
        t0 = time.monotonic()
        # A solution citing kernel evidence (puzzle3) was profiled under ncu by install_reference.
        row = Progress(ws.db_path).latest_profile(puzzle.id, which)
        if row and row["profiler"] == "ncu":
            metrics, run_dir, how = ProfileMetrics.from_json(row["metrics_json"]), Path(row["run_dir"]), "reused"
        else:
            outcome = actions.profile(ws, puzzle, which, profiler="ncu")
            metrics, run_dir, how = outcome.metrics, outcome.run_dir, f"{time.monotonic() - t0:.1f} s"
        print(f"\n== {puzzle.id} {which} under ncu ({how}): {run_dir}")
        for k in metrics.kernels[:6]:
            print(f"  {k['count']:3d}x {k['mean_us']:8.2f} us  dram {k.get('dram_throughput_pct', float('nan')):5.1f}%  "
                  f"sm {k.get('sm_throughput_pct', float('nan')):5.1f}%  occ {k.get('achieved_occupancy_pct', float('nan')):5.1f}%  "
                  f"regs {k.get('registers_per_thread', float('nan')):4.0f}  grid {k.get('grid_size', float('nan')):6.0f}  "
                  f"waves {k.get('waves_per_sm', float('nan')):5.2f}  {k['name'][:60]}")
        for name, value in sorted(metrics.values.items()):
            print(f"  {name} = {value:.6g}")
        shutil.copy(run_dir / "ncu.csv", args.out / f"{puzzle.id}_{which}_ncu.csv")
    return 0


if __name__ == "__main__":
    sys.exit(main())
