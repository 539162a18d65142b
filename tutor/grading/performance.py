"""Correctness and speed criteria from the harness's raw results."""

from __future__ import annotations

import statistics
from dataclasses import dataclass, field

from tutor.catalog import Puzzle, Tier
from tutor.grading.verdict import Criterion
from tutor.stats import Estimate, speedup


def check_correctness(puzzle: Puzzle, checks: list[dict], timed_checks=()) -> Criterion:
    """The checked inputs one by one, then every timed output: work skipped only when timed is caught."""
    limit = puzzle.correctness.max_rel_l2
    on_host = puzzle.correctness.output == "host"

    def limit_of(c: dict) -> float:
        return limit * SAMPLED_SLACK if c.get("sampled") else limit

    def ok(c: dict) -> bool:
        return c["ok_structure"] and c["rel_l2"] <= limit_of(c) and not (on_host and c.get("on_gpu"))

    def describe(c: dict) -> str:
        if not c["ok_structure"]:
            return c["problem"]
        if on_host and c.get("on_gpu"):
            return "the output is on the GPU: forward() must return it in host memory (a CPU tensor), as the spec says"
        part = f" at {c['sampled_values']} sampled values" if c.get("sampled_values") else ""
        if c.get("judged"):  # a decode's choices, scored by the oracle along the learner's own path
            part = " between each choice's score and the best of its step, along your own path"
        return f"relative L2 error {c['rel_l2']:.2e}{part}, " + ("ok" if ok(c) else f"too far (limit {limit_of(c):g})")

    details = [f"input {i}: {describe(c)}" for i, c in enumerate(checks, start=1)]
    wrong = [(r, c) for r, c in enumerate(timed_checks, start=1) if not ok(c)]
    if timed_checks and not wrong:
        details.append(f"timed calls: all {len(timed_checks)} checked outputs match too")
    details += [f"timed call {r}: {describe(c)}" for r, c in wrong[:3]]
    if len(wrong) > 3:
        details.append(f"... and {len(wrong) - 3} more timed calls")
    checks_ok = bool(checks) and all(map(ok, checks))
    passed = checks_ok and not wrong
    oracle = puzzle.correctness.oracle
    if passed:
        summary = f"Output matches {oracle} on {len(checks)} fresh inputs."
    elif checks_ok:
        summary = (f"Output differs from {oracle} in {len(wrong)} of {len(timed_checks)} timed calls checked: "
                   "every timed output is checked too.")
    else:
        summary = f"Output differs from {oracle}."
    return Criterion("correctness", passed, summary, details)


def speedups_vs(samples_ms: dict[str, list[float]], candidate: str = "mine") -> dict[str, Estimate]:
    return {name: speedup(ms, samples_ms[candidate]) for name, ms in samples_ms.items() if name != candidate}


# An output checked at sampled values (tutor.harness.call_checks: a large output of a round's other calls) is held
# to 1.5 times the limit: 16384 values estimate the whole output's error within a few percent (an honest output
# near the limit must not fail on the draw), and work skipped reads errors near 1; one call of every
# round, drawn after it, and the checked inputs are compared whole at the exact limit.
SAMPLED_SLACK = 1.5


# A tier on the GPU clock also needs the learner's calls, host included, to keep near the
# comparator's (median ratio): GPU time alone would reward moving the work onto the host, which
# costs many times the call (a GEMV on the CPU: ratios near 0.05). Near, not level: an honest
# host-bound solution (torch.compile's cudagraph trees spend 0.1-0.4 ms of host a call) against a
# GPU-bound graph replay reads 0.33-0.94 between grades of the same code on the H100 hosts
# (puzzle1's compiled fp8 model against bf16's graph, 12 grades), and two host-bound graph replays
# 0.72-1.0: at 0.5 one grade in five lost its tier to the host's weather.
HOST_GUARD = 0.25
# Calls that take this much longer on the call clock than their GPU time are waiting on the host.
HOST_BOUND = 1.2


@dataclass
class Measured:
    """What the harness timed, per workload and round: each call's time and (CUDA) the GPU's alone."""

    call_ms: dict[str, list[float]]
    gpu_ms: dict[str, list[float]] = field(default_factory=dict)
    host_timed: list[str] = field(default_factory=list)  # charged GPU work their events missed
    clocks: dict[str, dict] = field(default_factory=dict)  # how each was timed (tutor.harness.gpu_clock)
    note: str = ""
    environment: dict = field(default_factory=dict)  # the GPU around the timed rounds (tutor.harness.gpu_environment)
    compile: dict = field(default_factory=dict)  # what torch.compile did in the candidate (tutor.harness.compile_report)

    @classmethod
    def from_result(cls, result: dict) -> Measured:
        return cls(result["samples_ms"], result.get("gpu_samples_ms", {}), result.get("host_timed", []),
                   result.get("clocks", {}), result.get("timing_note", ""), result.get("environment", {}),
                   result.get("compile", {}))

    def speedups(self, clock: str = "call") -> dict[str, Estimate]:
        samples = self.gpu_ms if clock == "gpu" else self.call_ms
        return speedups_vs(samples) if "mine" in samples else {}


def tier_met(tier: Tier, speedups: dict[str, dict[str, Estimate]]) -> bool:
    """The lower bound clears the tier on its clock; on the GPU clock, the calls keep pace too."""
    if speedups[tier.clock][tier.vs].low < tier.min_speedup:
        return False
    return tier.clock == "call" or speedups["call"][tier.vs].median >= HOST_GUARD


def tier_reached(puzzle: Puzzle, speedups: dict[str, dict[str, Estimate]]) -> str:
    """The highest tier whose bounds all hold, each tier requiring those below it.

    A tier may be listed more than once (one entry per comparator or clock): it counts
    only when every one of its entries is met.
    """
    below, current = "", ""  # current: the tier being checked; below: the last one fully met
    for tier in puzzle.tiers:
        if tier.name != current:
            below, current = current, tier.name
        if not tier_met(tier, speedups):
            return below
    return current


def how_timed(measured: Measured, name: str) -> str:
    """What bound a GPU workload's calls (tutor.harness.gpu_clock): its call clock against the GPU's own time."""
    clock, gpu_ms = measured.clocks.get(name), measured.gpu_ms.get(name)
    if not clock or not gpu_ms:
        return ""
    gpu, loop = statistics.median(gpu_ms), statistics.median(measured.call_ms[name])
    bound = "host" if loop > HOST_BOUND * gpu else "GPU"
    idle = ("; GPU time from an idle GPU: forward() waits for the GPU, so holding it would time the wait"
            if clock["method"] == "idle" else "")
    return f" ({bound}-bound: {loop:.4g} ms a call until the GPU is done, {gpu:.4g} ms of it on the GPU{idle})"


def describe_tier(tier: Tier, speedups: dict[str, dict[str, Estimate]]) -> str:
    est = speedups[tier.clock][tier.vs]
    on = " on GPU time" if tier.clock == "gpu" else ""
    line = (f"{tier.name}: >= {tier.min_speedup:g}x vs {tier.vs}{on}: you are {est.median:.2f}x "
            f"(95% CI {est.low:.2f}-{est.high:.2f})")
    if tier.clock == "gpu":
        calls = speedups["call"][tier.vs].median
        line += f", your calls {calls:.2f}x theirs host included (at least {HOST_GUARD:g}x)"
    return f"{line}, {'met' if tier_met(tier, speedups) else 'not met'}"


def compile_lines(report: dict) -> list[str]:
    """tutor.harness.compile_report's report in a learner's words: one line of counts, then each kind's first reasons."""
    if not report:
        return []
    captured = f", {report['graphs_captured']} CUDA graph(s) captured" if "graphs_captured" in report else ""
    lines = [f"torch.compile: {report['compiled_graphs']} graph(s), {report['graph_breaks']} graph break(s), "
             f"{report['recompiles']} recompile(s), CUDA graphs skipped {report['cudagraph_skips']} time(s){captured}"]
    for kind, words in (("cudagraph_skips", "CUDA graphs skipped"), ("graph_breaks", "graph break"),
                        ("recompiles", "recompiled"), ("recompile_limit", "stopped compiling, eager from then on")):
        for reason in report.get("reasons", {}).get(kind, []):
            lines.append(f"  {words}: {reason}")
    return lines


def environment_lines(environment: dict) -> list[str]:
    """Which GPU timed the run and in what state; anything that may have moved the figures, first."""
    line = environment.get("summary", "")
    return [f"Caution: {c}" for c in environment.get("concerns", [])] + ([line] if line else [])


def missed_work(measured: Measured, name: str) -> str:
    """The work a workload's events missed, charged to its GPU clock: how much, so that a charge of sync jitter on a
    long call (a few hundredths of a millisecond) reads as what it is beside a side stream's real tail."""
    clock, gpu_ms = measured.clocks.get(name, {}), measured.gpu_ms.get(name)
    after = clock.get("after_ms")
    # Beyond the ruler's floor (tutor.harness.gpu_clock.after_floor_ms): what the GPU clock was charged.
    late = clock.get("charge_ms", statistics.median(after) if after else 0.0)
    amount = f": {late:.2g} ms a call, {late / statistics.median(gpu_ms):.1%} of its GPU time" if after and gpu_ms else ""
    return (f"{name}: GPU work ran after the timed stream had finished (a side stream not joined back?) and was "
            f"counted in full{amount}")


def check_performance(puzzle: Puzzle, measured: Measured) -> tuple[Criterion, str, dict[str, dict[str, Estimate]]]:
    """The tier reached, the details behind it, and the speed-ups per clock."""
    speedups = {"call": measured.speedups("call"), "gpu": measured.speedups("gpu")}
    tier = tier_reached(puzzle, speedups)
    details = [f"{name}: median {statistics.median(ms):.4g} ms over {len(ms)} rounds"
               f"{how_timed(measured, name)}" for name, ms in measured.call_ms.items()]
    # What the events missed is charged to the GPU clock alone (the call clock drains every stream): with no GPU
    # clock (several ranks: tutor.harness.lockstep.merged) it changed nothing, and NCCL's streams set it off.
    details += [missed_work(measured, name) for name in (measured.host_timed if measured.gpu_ms else [])]
    if measured.note:
        details.append(measured.note)
    details += [describe_tier(t, speedups) for t in puzzle.tiers]
    details += compile_lines(measured.compile) + environment_lines(measured.environment)
    first = puzzle.tiers[0]
    summary = (f"Tier reached: {tier}." if tier else
               f"Not yet {first.min_speedup:g}x faster than {first.vs} (the lower bound of the 95% interval counts).")
    return Criterion("performance", bool(tier), summary, details), tier, speedups
