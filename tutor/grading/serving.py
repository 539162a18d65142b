"""A serving puzzle's speed (issue 18): more tokens a second than the baseline's server on the same trace, at
a p99 latency no worse, both from the harness's own stamps (tutor.harness.serving.figures).

The two servers replay the same trace in pairs, in an order drawn each pair, as a grade's rounds are
interleaved; each pair gives a throughput ratio and a p99 latency ratio, summarised like any speed-up by
their median and an order-statistic interval (tutor.stats). A tier needs the throughput ratio's lower
bound over its bar and the latency ratio's upper bound under the puzzle's limit: more tokens bought with
longer waits earn nothing.
"""

from __future__ import annotations

from tutor.stats import Estimate, median_interval


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


def latency_line(estimates: dict[str, Estimate], max_latency_ratio: float = 1.0) -> str:
    """The verdict's words for the latency side of a serving tier."""
    p99 = estimates["latency_p99"]
    verdict = "within" if p99.high <= max_latency_ratio else "over"
    return (f"p99 latency {p99.median:.2f}x the baseline's (95% CI {p99.low:.2f}-{p99.high:.2f}), {verdict} the "
            f"limit of {max_latency_ratio:.2f}x")
