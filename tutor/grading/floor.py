"""The physical floor: no call can take less time than its least work needs on this GPU.

The puzzle's spec states the least work one forward() needs (bytes that must come from HBM or across
the host link, FLOPs that must run); the ruler measured this GPU's best HBM read bandwidth, matmul
rate and, where it is needed, the host link's bandwidth each way (tutor.harness.peaks). A timing under that
floor is not a fast solution: a result was cached or skipped, or a timer missed work. Whatever the
cause, it is refused, with the figures.
"""

from __future__ import annotations

import statistics

from tutor.grading.verdict import Criterion

# The probe (torch's sum, cuBLAS's matmul) stays below a datasheet's figures, and a hand-tuned kernel may
# beat it a little: the floor allows this much more than was measured, so only the impossible is refused.
# On the H100 (2026-11-25) it read 2946 GB/s (88% of the datasheet's 3.35 TB/s) and 803 TFLOP/s in bf16
# (81% of 989): even the datasheet's figures stay inside 1.25x.
SLACK = 1.25
# fp8 tensor cores run twice as many FLOPs as bf16 ones on every GPU with fp8 (Ada, Hopper, Blackwell).
# fp32 runs on the CUDA cores, not the tensor cores: 67 against 989 dense TFLOP/s on an H100 SXM's datasheet.
RATE_OVER_BF16 = {"bf16": 1.0, "fp16": 1.0, "fp8": 2.0, "fp32": 67 / 989}
CLOCK_WORDS = {"call": "time a call", "gpu": "GPU time a call"}
LINK_WORDS = {"h2d": "from pinned host memory", "d2h": "into pinned host memory"}


def floor_ms(floor: dict) -> float:
    """The least time one forward() can take on the GPU that measured `floor`."""
    moving = floor.get("hbm_bytes", 0) / (floor["hbm_read_gbps"] * 1e9)
    computing = floor.get("flops", 0) / (floor["bf16_tflops"] * 1e12 * RATE_OVER_BF16[floor.get("flop_dtype", "bf16")])
    # A duplex link carries both ways at once: the slower way bounds the call, not their sum.
    crossing = max((floor[f"{way}_bytes"] / (floor[f"{way}_gbps"] * 1e9) for way in crossings(floor)), default=0.0)
    return max(moving, computing, crossing) * 1e3


def crossings(floor: dict) -> list[str]:
    """The ways across the host link ("h2d", "d2h") that bound the call: their bytes are part of the least work
    and their rate was measured (the probe runs it for such puzzles alone)."""
    return [way for way in LINK_WORDS if floor.get(f"{way}_bytes") and floor.get(f"{way}_gbps")]


def link_rates(rates: dict, ways=tuple(LINK_WORDS)) -> str:
    """", 55.3 GB/s into pinned host memory" for each of `ways` whose rate `rates` holds; "" for none."""
    return "".join(f", {rates[f'{way}_gbps']:.3g} GB/s {LINK_WORDS[way]}" for way in ways if rates.get(f"{way}_gbps"))


def describe(floor: dict) -> str:
    link = link_rates(floor, crossings(floor))
    return (f"{floor_ms(floor):.4g} ms for {floor['what']}, at the best this {floor['gpu']} has shown "
            f"({floor['hbm_read_gbps'] / 1e3:.3g} TB/s read from HBM, {floor['bf16_tflops']:.0f} TFLOP/s in bf16{link})")


def check_floor(floor: dict | None, call_ms: dict[str, list[float]], gpu_ms: dict[str, list[float]],
                candidate: str = "mine") -> tuple[list[Criterion], list[str]]:
    """A failed criterion when the candidate's median on either clock is under the floor; else the
    line that says how close it came (for the performance criterion)."""
    if not floor:
        return [], []
    if "unavailable" in floor:  # the probe failed in the ruler: say so, refuse nothing
        return [], [f"physical floor: not measured this grade ({floor['unavailable']})"]
    least = floor_ms(floor)
    medians = {clock: statistics.median(samples[candidate])
               for clock, samples in (("call", call_ms), ("gpu", gpu_ms)) if samples.get(candidate)}
    under = {clock: ms for clock, ms in medians.items() if ms < least / SLACK}
    if under:
        details = [f"your {CLOCK_WORDS[clock]}: {ms:.4g} ms, under the floor by {least / ms:.2g}x"
                   for clock, ms in under.items()]
        details += [f"floor: {describe(floor)}",
                    "forward() must do all of its work inside the call, on the GPU the harness times: "
                    "no result kept from an earlier call, no work skipped, nothing left running past the call."]
        return [Criterion("physical floor", False, "Faster than this GPU can do the work: the timing cannot be "
                          "real.", details)], []
    if "gpu" not in medians:
        return [], []
    return [], [f"physical floor: {describe(floor)}; you run at {100 * least / medians['gpu']:.0f}% of the "
                "floor's speed on GPU time"]
