"""Grade a puzzle's reference solution (or its untouched baseline) N times; print verdict agreement and spread.

    python benchmarks/grade_stability.py puzzle0 --runs 5 [--which reference|baseline] [--rounds 60,240] [--json out.json]
        [--workspace DIR] [--loop-calls 2-4,4-8]

Each grade is a fresh harness process with a fresh seed, as a learner's would be.
Target (issue 2/5): 100% verdict agreement; speedups within ±3% on the H100.

Where the spread comes from: each grade's raw samples (the run's result.json) give the
speed-up's own sampling error (bootstrap SE of the median ratio). If the spread between
grades is no larger than that, more rounds narrow it; if it is larger, something changes
between processes (the host's speed, clocks) that no number of rounds removes.
`--rounds 60,240` alternates the grades between those round counts to show which it is;
each workload's GPU and host medians per grade show which clock moved. `--loop-calls 2-4,4-8` alternates
them between those calls a round (the harness draws each round's between the two; its own: 4-8 on a GPU): what
a shorter round costs the tiers' intervals, and saves a grade's time.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import random
import statistics
import sys
import time
from pathlib import Path

from grade_latency import timed

from tutor import actions
from tutor.catalog import get_puzzle
from tutor.grading.performance import environment_lines
from tutor.reference import ready_to_grade
from tutor.runner import RESULT_NAME
from tutor.workspace import init_workspace, scratch_workspace

BOOTSTRAP_RESAMPLES = 400


def with_rounds(puzzle, rounds: int | None, loop_calls: tuple[int, ...] = ()):
    """`puzzle` graded with `rounds` rounds of `loop_calls` calls each, where given (the puzzle's, where not)."""
    timing = dataclasses.replace(puzzle.timing, rounds=rounds or puzzle.timing.rounds,
                                 loop_calls=loop_calls or puzzle.timing.loop_calls)
    return dataclasses.replace(puzzle, timing=timing)


def arm_of(row: dict) -> str:
    """A grade's arm: its rounds, and its calls a round where a --loop-calls arm set them."""
    return f"{row['rounds']} rounds" + (f" of {row['loop_calls']} calls" if row.get("loop_calls") else "")


def newest_grade_result(ws) -> dict:
    run = max(ws.runs_dir.glob("*-grade-*"), key=lambda p: p.stat().st_mtime)
    return json.loads((run / RESULT_NAME).read_text())


def grade_record(puzzle, stages: dict, v, raw: dict) -> dict:
    """One grade as these benchmarks keep it (benchmarks/grades_fixture.py makes fixture rows of it): `v` the verdict,
    `raw` the harness's result it was read from (newest_grade_result), `stages` its seconds by stage."""
    return {"rounds": puzzle.timing.rounds, "loop_calls": "-".join(map(str, puzzle.loop_calls)),
            "passed": v.passed,
            "tier": v.tier, "wall_s": stages["total"], "stages": stages, "timings_ms": v.timings_ms,
            "speedups": {"call": v.speedups, "gpu": v.gpu_speedups}, "criteria": {c.name: c.passed for c in v.criteria},
            "failed": {c.name: c.details[:6] for c in v.criteria if not c.passed},
            "samples_ms": raw.get("samples_ms", {}), "clocks": raw.get("clocks", {}),
            # A serving grade's replay pairs: (the baseline's figures, the learner's), each.
            "serving_pairs": raw.get("pairs", []), "gpu_busy": raw.get("gpu_busy"),
            "host_timed": raw.get("host_timed", []), "facts": v.facts,
            # The GPU's clocks, power and slowdowns around the timed rounds: grades of one style on two
            # machines that disagree say here whether one GPU ran slower.
            "environment": raw.get("environment", {})}


def tier_speedups(puzzle, speedups: dict[str, dict]) -> list[tuple[str, tuple[str, dict]]]:
    """(clock, (vs, estimate)) for every comparator on the call clock, and on the GPU clock where a tier uses it."""
    gpu_vs = {t.vs for t in puzzle.tiers if t.clock == "gpu"}
    return [("call", item) for item in speedups["call"].items()] + [
        ("gpu", item) for item in speedups["gpu"].items() if item[0] in gpu_vs]


def median_se(values: list[float], rng: random.Random) -> float:
    """Bootstrap standard error of the median."""
    n = len(values)
    meds = [statistics.median(rng.choices(values, k=n)) for _ in range(BOOTSTRAP_RESAMPLES)]
    return statistics.stdev(meds)


def ratios(samples: dict[str, list[float]], vs: str) -> list[float]:
    return [b / m for b, m in zip(samples[vs], samples["mine"]) if m > 0]


def decompose(rows: list[dict]) -> None:
    """Per comparator and round count: the spread between grades against each grade's own sampling error."""
    rng = random.Random(0)
    for name in sorted({arm_of(r) for r in rows}):
        arm = [r for r in rows if arm_of(r) == name]
        if len(arm) < 2 or not arm[0]["samples_ms"]:  # a serving grade has replays, not rounds of calls
            continue
        print(f"  {name}, {len(arm)} grades:")
        for vs in arm[0]["speedups"]["call"]:
            medians = [statistics.median(ratios(r["samples_ms"], vs)) for r in arm]
            mid = statistics.median(medians)
            between = statistics.stdev(medians) / mid
            within = statistics.fmean(median_se(ratios(r["samples_ms"], vs), rng) for r in arm) / mid
            excess = max(0.0, between**2 - within**2) ** 0.5
            print(f"    vs {vs:14} between-grade SD {between:6.2%}  within-grade SE {within:6.2%}  "
                  f"excess {excess:6.2%}  range -{(mid - min(medians)) / mid:.1%} / +{(max(medians) - mid) / mid:.1%}")
        for name in arm[0]["samples_ms"]:
            meds = [statistics.median(r["samples_ms"][name]) for r in arm]
            line = f"    {name:16} median ms per grade: " + " ".join(f"{m:.4f}" for m in meds)
            clocks = [r["clocks"][name] for r in arm if name in r.get("clocks", {})]
            if clocks:
                line += f"   {clocks[0]['method']}: GPU " + " ".join(f"{statistics.median(c['gpu_ms']):.4f}" for c in clocks)
                line += "  enqueue " + " ".join(f"{statistics.median(c['host_ms']):.4f}" for c in clocks)
            print(line)


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("puzzle")
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--which", default="reference", help="reference, baseline or alternatives/NAME")
    parser.add_argument("--rounds", default="", help="comma-separated round counts to alternate (default: the puzzle's)")
    parser.add_argument("--loop-calls", default="", help="comma-separated LO-HI calls a round to alternate "
                        "(default: the harness's)")
    parser.add_argument("--json", type=Path)
    parser.add_argument("--workspace", type=Path, help="a scratch workspace to use and keep (default: a new one); "
                        "runs sharing one share its compile caches, so a CUDA extension is built once, and its "
                        "profiles of the baseline, so the baseline is profiled once")
    args = parser.parse_args()
    puzzle = get_puzzle(args.puzzle)
    arms = [int(r) for r in args.rounds.split(",") if r] or [None]
    loops = [tuple(int(n) for n in arm.split("-")) for arm in args.loop_calls.split(",") if arm] or [()]
    ws = init_workspace(args.workspace, remember=False) if args.workspace else scratch_workspace("infprof-stability-")

    t0 = time.monotonic()
    ready_to_grade(ws, puzzle, args.which, reuse_baseline=args.workspace is not None)
    print(f"profile baseline (and install the reference): {time.monotonic() - t0:.1f} s", flush=True)

    rows = []
    for i in range(args.runs):
        graded = with_rounds(puzzle, arms[i % len(arms)], loops[i % len(loops)])
        started = time.time()
        stages, v = timed(lambda on_event: actions.grade(ws, graded, on_event), echo=True)
        rows.append({"run": i + 1, "started": started, **grade_record(graded, stages, v, newest_grade_result(ws))})
        sp = "  ".join(f"vs {k}{' (GPU)' if clock == 'gpu' else ''}: {s['median']:.3f}x [{s['low']:.3f}, {s['high']:.3f}]"
                       for clock, (k, s) in tier_speedups(puzzle, rows[-1]["speedups"]))
        ms = "  ".join(f"{k} {t:.4f} ms" for k, t in v.timings_ms.items())
        print(f"run {i + 1} ({arm_of(rows[-1])}): passed={v.passed} tier={v.tier or '-':6} {sp}  | {ms}  "
              f"({stages['total']:.1f} s)", flush=True)
        if v.facts.get("config"):  # puzzle3: the config GemLite's autotuner kept in this process
            print(f"    {v.facts['source']}: {v.facts['config']}", flush=True)
        for line in environment_lines(rows[-1]["environment"]):
            print(f"    {line}", flush=True)
        if rows[-1]["host_timed"]:
            print(f"    timed by the host clock: {rows[-1]['host_timed']}", flush=True)
        for line in (d for c in v.criteria for d in c.details if d.startswith(("GPU busy", "physical floor"))):
            print(f"    {line}", flush=True)  # a serving grade's NVML figures, each grade
        for c in v.criteria:
            if not c.passed or i == 0:
                print(f"    {c.name}: {'pass' if c.passed else 'FAIL'}: {c.summary} {'; '.join(c.details[:4])}", flush=True)
        if args.json:  # after every grade, so a run stopped at its time limit keeps what it graded
            args.json.write_text(json.dumps(rows, indent=1))

    verdicts = [(r["passed"], r["tier"]) for r in rows]
    agreement = verdicts.count(statistics.mode(verdicts)) / len(verdicts)
    print(f"\n{puzzle.id} {args.which}: verdict agreement {agreement:.0%} over {len(rows)} grades")
    for clock, vs in dict.fromkeys((c, k) for r in rows for c, (k, _) in tier_speedups(puzzle, r["speedups"])):
        medians = [r["speedups"][clock][vs]["median"] for r in rows]
        mid = statistics.median(medians)
        on = "GPU time" if clock == "gpu" else "call time"
        print(f"  speedup vs {vs} on {on}: median {mid:.3f}x, spread {min(medians):.3f}-{max(medians):.3f} "
              f"(-{(mid - min(medians)) / mid:.1%} / +{(max(medians) - mid) / mid:.1%})")
    print(f"  grade wall time: median {statistics.median(r['wall_s'] for r in rows):.1f} s")
    stage_names = list(dict.fromkeys(name for r in rows for name in r["stages"]))
    print("  seconds per stage (median): " + ", ".join(
        f"{name} {statistics.median(r['stages'].get(name, 0.0) for r in rows):.2f}" for name in stage_names))
    decompose(rows)
    return 0


if __name__ == "__main__":
    sys.exit(main())
