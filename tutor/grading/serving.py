"""A serving puzzle's speed (issue 18): more tokens a second than the baseline's server on the same trace, at
a p99 latency no worse, both from the harness's own stamps (tutor.harness.serving.figures).

The two servers replay the same trace in pairs, in an order drawn each pair, as a grade's rounds are
interleaved; each pair gives a throughput ratio and a p99 latency ratio, summarised like any speed-up by
their median and an order-statistic interval (tutor.stats). A tier needs the throughput ratio's lower
bound over its bar and the latency ratio's upper bound under the puzzle's limit: more tokens bought with
longer waits earn nothing.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from tutor.grading.verdict import Criterion
from tutor.stats import Estimate, median_interval

if TYPE_CHECKING:
    from tutor.catalog import Puzzle


def serving_estimates(pairs: list[tuple[dict, dict]]) -> dict[str, Estimate]:
    """(the baseline's figures, the learner's) a replay pair -> their throughput speed-up and p99 latency ratio."""
    if not pairs:
        raise ValueError("no replay pairs")
    return {"throughput": median_interval([m["tokens_per_s"] / b["tokens_per_s"] for b, m in pairs]),
            "latency_p99": median_interval([m["latency_p99_s"] / b["latency_p99_s"] for b, m in pairs])}


def serving_tier(bars: list[tuple[str, float]], estimates: dict[str, Estimate], max_latency_ratio: float = 1.0) -> str:
    """The highest tier (bars in rising order: (name, throughput speed-up)) the estimates earn; none while the
    p99 latency may be worse than the baseline's by more than `max_latency_ratio` allows."""
    if estimates["latency_p99"].high > max_latency_ratio:
        return ""
    reached = ""
    for name, bar in bars:
        if estimates["throughput"].low < bar:
            break
        reached = name
    return reached


def puzzle_serving_tier(puzzle: Puzzle, estimates: dict[str, Estimate]) -> str:
    """serving_tier under a puzzle's own bars and latency limit: what a grade reads, and a recorded grade re-read."""
    return serving_tier([(t.name, t.min_speedup) for t in puzzle.tiers], estimates, puzzle.serving.max_latency_ratio)


def latency_line(estimates: dict[str, Estimate], max_latency_ratio: float = 1.0) -> str:
    """The verdict's words for the latency side of a serving tier."""
    p99 = estimates["latency_p99"]
    verdict = "within" if p99.high <= max_latency_ratio else "over"
    return (f"p99 latency {p99.median:.2f}x the baseline's (95% CI {p99.low:.2f}-{p99.high:.2f}), {verdict} the "
            f"limit of {max_latency_ratio:.2f}x")


def check_serving_correctness(result: dict) -> Criterion:
    """Every request of every replay (the warm-up pair's too) got the oracle server's tokens."""
    checked, wrong = result["requests_checked"], result["mismatches"]
    if not wrong:
        return Criterion("correctness", True, f"Every request's tokens match the puzzle's server: {checked} "
                         f"requests over {len(result['pairs']) + 1} replays.")
    details = [f"request {m['rid']}: from token {m['at']} on, yours {m['got']}, expected {m['expected']}"
               for m in result["mismatched"]]
    return Criterion("correctness", False, f"{wrong} of {checked} requests got other tokens than the puzzle's "
                     "server gave them.", details + ["Batching changes no token of this model: look for a "
                                                     "request's cache, position or slot mixed up with another's."])


def check_serving_performance(puzzle: Puzzle, result: dict) -> tuple[Criterion, str, dict[str, Estimate]]:
    """The tier the throughput earns at the p99 latency limit, with each replay pair's figures behind it."""
    limit = puzzle.serving.max_latency_ratio
    estimates = serving_estimates([tuple(pair) for pair in result["pairs"]])
    tier = puzzle_serving_tier(puzzle, estimates)
    tput = estimates["throughput"]
    details = [f"replay {i + 1}: baseline {b['tokens_per_s']:.0f} tokens/s, p99 {b['latency_p99_s']:.3g} s; yours "
               f"{m['tokens_per_s']:.0f} tokens/s, p99 {m['latency_p99_s']:.3g} s"
               for i, (b, m) in enumerate(result["pairs"])]
    details.append(f"throughput {tput.median:.2f}x the baseline's (95% CI {tput.low:.2f}-{tput.high:.2f})")
    details.append(latency_line(estimates, limit))
    details += [f"{t.name}: >= {t.min_speedup:g}x the baseline's tokens a second: "
                f"{'met' if tput.low >= t.min_speedup else 'not met'}" for t in puzzle.tiers]
    if tier:
        return Criterion("performance", True, f"Tier reached: {tier}.", details), tier, estimates
    why = ("p99 latency may be worse than the baseline's" if estimates["latency_p99"].high > limit else
           f"Not yet {puzzle.tiers[0].min_speedup:g}x the baseline's tokens a second (the lower bound of the 95% "
           "interval counts)")
    return Criterion("performance", False, why + ".", details), "", estimates

