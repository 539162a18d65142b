"""Correctness and speed criteria from the harness's raw results."""

from __future__ import annotations

import statistics

from tutor.catalog import Puzzle
from tutor.grading.verdict import Criterion
from tutor.stats import Estimate, speedup


def check_correctness(puzzle: Puzzle, checks: list[dict], timed_checks=()) -> Criterion:
    """The checked inputs one by one, then every timed output: work skipped only when timed is caught."""
    limit = puzzle.correctness.max_rel_l2

    def ok(c: dict) -> bool:
        return c["ok_structure"] and c["rel_l2"] <= limit

    def describe(c: dict) -> str:
        if not c["ok_structure"]:
            return c["problem"]
        return f"relative L2 error {c['rel_l2']:.2e}, " + ("ok" if ok(c) else f"too far (limit {limit:g})")

    details = [f"input {i}: {describe(c)}" for i, c in enumerate(checks, start=1)]
    wrong = [(r, c) for r, c in enumerate(timed_checks, start=1) if not ok(c)]
    if timed_checks and not wrong:
        details.append(f"timed rounds: all {len(timed_checks)} outputs match too")
    details += [f"timed round {r}: {describe(c)}" for r, c in wrong[:3]]
    if len(wrong) > 3:
        details.append(f"... and {len(wrong) - 3} more timed rounds")
    checks_ok = bool(checks) and all(map(ok, checks))
    passed = checks_ok and not wrong
    oracle = puzzle.correctness.oracle
    if passed:
        summary = f"Output matches {oracle} on {len(checks)} fresh inputs."
    elif checks_ok:
        summary = (f"Output differs from {oracle} in {len(wrong)} of {len(timed_checks)} timed rounds: "
                   "every timed output is checked too.")
    else:
        summary = f"Output differs from {oracle}."
    return Criterion("correctness", passed, summary, details)


def speedups_vs(samples_ms: dict[str, list[float]], candidate: str = "mine") -> dict[str, Estimate]:
    return {name: speedup(ms, samples_ms[candidate]) for name, ms in samples_ms.items() if name != candidate}


def tier_reached(puzzle: Puzzle, speedups: dict[str, Estimate]) -> str:
    """The highest tier whose bounds all hold, each tier requiring those below it.

    A tier may be listed more than once (one entry per comparator): it counts
    only when every one of its entries is met.
    """
    below, current = "", ""  # current: the tier being checked; below: the last one fully met
    for tier in puzzle.tiers:
        if tier.name != current:
            below, current = current, tier.name
        if speedups[tier.vs].low < tier.min_speedup:
            return below
    return current


def check_performance(puzzle: Puzzle, speedups: dict[str, Estimate], samples_ms: dict[str, list[float]],
                      host_timed: list[str] | None = None) -> tuple[Criterion, str]:
    tier = tier_reached(puzzle, speedups)
    details = [f"{name}: median {statistics.median(ms):.4g} ms over {len(ms)} rounds" for name, ms in samples_ms.items()]
    for name in host_timed or ():
        details.append(f"{name}: timed by the host clock: GPU work ran outside the timed stream "
                       "(a side stream not joined back?) and was counted in full")
    for t in puzzle.tiers:
        est = speedups[t.vs]
        mark = "met" if est.low >= t.min_speedup else "not met"
        details.append(f"{t.name}: >= {t.min_speedup:g}x vs {t.vs}: you are {est.median:.2f}x "
                       f"(95% CI {est.low:.2f}-{est.high:.2f}), {mark}")
    first = puzzle.tiers[0]
    summary = (f"Tier reached: {tier}." if tier else
               f"Not yet {first.min_speedup:g}x faster than {first.vs} (the lower bound of the 95% interval counts).")
    return Criterion("performance", bool(tier), summary, details), tier
