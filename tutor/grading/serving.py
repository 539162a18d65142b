"""A serving puzzle's speed (issue 18): more tokens a second than the baseline's server on the same trace, at
a p99 latency no worse, both from the harness's own stamps (tutor.harness.serving.figures).

The two servers replay the same trace in pairs, in an order drawn each pair, as a grade's rounds are
interleaved; each pair gives a throughput ratio and a p99 latency ratio, summarised like any speed-up by
their median and an order-statistic interval (tutor.stats). A tier needs the throughput ratio's lower
bound over its bar and the latency ratio's upper bound under the puzzle's limit: more tokens bought with
longer waits earn nothing.
"""

from __future__ import annotations

import statistics
from typing import TYPE_CHECKING

from tutor.grading.floor import SLACK
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


def check_serving_correctness(result: dict, max_rel_l2: float = 0.0) -> Criterion:
    """Every request of every replay (the warm-up pair's too) got the oracle server's tokens, and, where the puzzle
    asks for them, each token's logit within `max_rel_l2` of the oracle's over every replay."""
    checked, wrong = result["requests_checked"], result["mismatches"]
    logits = result.get("logits")
    if logits and logits.get("oracle_missing"):
        return Criterion("correctness", False, f"The puzzle's own server gave {logits['oracle_missing']} tokens "
                         "without their logit, so yours cannot be checked: the puzzle is broken, not your server.",
                         ["Its [serving] logits asks every server for (token, logit) pairs: report it to the "
                          "puzzle's authors (`infprof-tutor dev check` grades its solutions)."])
    if not wrong and logits and (logits["missing"] or logits["rel_l2"] > max_rel_l2):
        if logits["missing"]:  # no per-replay error: the logits that never came were never compared
            return Criterion("correctness", False, f"{logits['missing']} of {logits['tokens']} tokens came without "
                             "their logit.", ["step() gives each token as a (token, logit) pair: the logit the model "
                                              "gave the token it chose."])
        lines = [f"{f'replay {i}' if i else 'warm-up replay'}: logits' relative L2 error {e:.2e}"
                 for i, e in enumerate(logits["by_replay"])]
        return Criterion("correctness", False, f"Every token matches, but the logits do not: relative L2 error "
                         f"{logits['rel_l2']:.2e} in the worst replay, over the {max_rel_l2:g} allowed.",
                         lines + ["Each logit is the model's for the token it chose: a server that does not run "
                                  "the whole model (its attention over the cache included) cannot give it."])
    if not wrong:
        tail = (f", and every token's logit within {max_rel_l2:g} of its own (worst replay "
                f"{logits['rel_l2']:.2e})") if logits else ""
        return Criterion("correctness", True, f"Every request's tokens match the puzzle's server: {checked} "
                         f"requests over {len(result['pairs']) + 1} replays{tail}.")
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


def check_serving_floor(result: dict) -> tuple[list[Criterion], list[str]]:
    """How busy the GPU was during each side's replays (NVML's samples, read by the coordinator over the periods
    wholly inside each replay), as evidence; and a failed criterion when the learner's replays kept it busy
    for a smaller share of their time than the model's least FLOPs for their traces need at this GPU's best
    rate: the tokens did not come from the model on this GPU."""
    busy = result.get("gpu_busy")
    if not busy:
        return [], []
    if "unavailable" in busy:
        return [], [f"GPU busy time: not read this grade ({busy['unavailable']})"]
    shares = {side: statistics.median(r["busy_ms"] / r["covered_ms"] if r["covered_ms"] else 0.0
                                      for r in busy[side]) for side in ("oracle", "mine")}
    lines = [f"GPU busy during the replays (NVML): yours {100 * shares['mine']:.1f}% of each replay's time, the "
             f"baseline's server {100 * shares['oracle']:.1f}% (medians)"]
    if "least_ms" not in busy:
        return [], lines
    # The least work spread over a replay, as a share of its time: what a server that ran the model must reach.
    least = statistics.median(ms / (r["seconds"] * 1e3) for ms, r in zip(busy["least_ms"], busy["mine"]))
    floor = (f"the model's least work for each replay's trace ({statistics.median(busy['least_ms']):.3g} ms at "
             f"this {busy['rates']['gpu']}'s best bf16 rate, {busy['rates']['bf16_tflops']:.0f} TFLOP/s), "
             f"{100 * least:.2g}% of a replay's time")
    if shares["mine"] < least / SLACK:
        return [Criterion("physical floor", False, "Your server kept the GPU busy for less time than the model's "
                          "work takes: its tokens did not come from running the model here.",
                          [f"your replays: the GPU busy {100 * shares['mine']:.2g}% of their time (median; NVML reads "
                           "each of its periods, 200 ms on an H100, in whole percents)",
                           f"floor: {floor}",
                           "step() must run the puzzle's model on the GPU for the tokens it returns: no table "
                           "or copy of the model's answers on the host."])], lines
    return [], [*lines, f"physical floor: {floor}; yours {100 * shares['mine']:.1f}%"]
