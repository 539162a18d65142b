"""Correctness and speed criteria from the harness's raw results."""

from __future__ import annotations

import statistics

from tutor.catalog import Puzzle
from tutor.grading.verdict import Criterion
from tutor.stats import Estimate, speedup


def check_correctness(puzzle: Puzzle, checks: list[dict]) -> Criterion:
    limit = puzzle.correctness.max_rel_l2
    details = []
    for i, c in enumerate(checks, start=1):
        if not c["ok_structure"]:
            details.append(f"input {i}: {c['problem']}")
        else:
            verdict = "ok" if c["rel_l2"] <= limit else f"too far (limit {limit:g})"
            details.append(f"input {i}: relative L2 error {c['rel_l2']:.2e}, {verdict}")
    passed = bool(checks) and all(c["ok_structure"] and c["rel_l2"] <= limit for c in checks)
    summary = (f"Output matches {puzzle.correctness.oracle} on {len(checks)} fresh inputs." if passed
               else f"Output differs from {puzzle.correctness.oracle}.")
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
