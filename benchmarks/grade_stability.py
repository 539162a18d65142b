"""Grade a puzzle's reference solution (or its untouched baseline) N times; print verdict agreement and spread.

    python benchmarks/grade_stability.py puzzle0 --runs 5 [--which reference|baseline] [--json out.json]

Each grade is a fresh harness process with a fresh seed, as a learner's would be.
Target (issue 2/5): 100% verdict agreement; speedups within ±3% on the H100.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import tempfile
import time
from pathlib import Path

from tutor import actions
from tutor.catalog import get_puzzle
from tutor.reference import ready_to_grade
from tutor.workspace import init_workspace


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("puzzle")
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--which", choices=["reference", "baseline"], default="reference")
    parser.add_argument("--json", type=Path)
    args = parser.parse_args()
    puzzle = get_puzzle(args.puzzle)
    ws = init_workspace(Path(tempfile.mkdtemp(prefix="infprof-stability-")) / "ws")

    t0 = time.monotonic()
    ready_to_grade(ws, puzzle, args.which)
    print(f"profile baseline (and install the reference): {time.monotonic() - t0:.1f} s", flush=True)

    rows = []
    for i in range(args.runs):
        t0 = time.monotonic()
        v = actions.grade(ws, puzzle)
        wall = time.monotonic() - t0
        rows.append({"run": i + 1, "passed": v.passed, "tier": v.tier, "wall_s": wall, "timings_ms": v.timings_ms,
                     "speedups": v.speedups, "criteria": {c.name: c.passed for c in v.criteria},
                     "host_timed": [d for c in v.criteria for d in c.details if "host clock" in d]})
        sp = "  ".join(f"vs {k}: {s['median']:.3f}x [{s['low']:.3f}, {s['high']:.3f}]" for k, s in v.speedups.items())
        ms = "  ".join(f"{k} {t:.4f} ms" for k, t in v.timings_ms.items())
        print(f"run {i + 1}: passed={v.passed} tier={v.tier or '-':6} {sp}  | {ms}  ({wall:.1f} s)", flush=True)
        for note in rows[-1]["host_timed"]:
            print(f"    {note}", flush=True)
        for c in v.criteria:
            if not c.passed or i == 0:
                print(f"    {c.name}: {'pass' if c.passed else 'FAIL'}: {c.summary} {'; '.join(c.details[:4])}", flush=True)

    verdicts = [(r["passed"], r["tier"]) for r in rows]
    agreement = verdicts.count(statistics.mode(verdicts)) / len(verdicts)
    print(f"\n{puzzle.id} {args.which}: verdict agreement {agreement:.0%} over {len(rows)} grades")
    for vs in rows[0]["speedups"]:
        medians = [r["speedups"][vs]["median"] for r in rows]
        mid = statistics.median(medians)
        print(f"  speedup vs {vs}: median {mid:.3f}x, spread {min(medians):.3f}-{max(medians):.3f} "
              f"(-{(mid - min(medians)) / mid:.1%} / +{(max(medians) - mid) / mid:.1%})")
    print(f"  grade wall time: median {statistics.median(r['wall_s'] for r in rows):.1f} s")
    if args.json:
        args.json.write_text(json.dumps(rows, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
