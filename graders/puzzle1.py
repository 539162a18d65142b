"""puzzle1: the speed must come from fp8 weights, not from going back to bf16.

A bf16 model in a CUDA graph is 2x faster than bf16 eager, so speed alone would
let a learner pass by undoing the quantization. The harness measures what each
workload's prepare() leaves on the GPU; the candidate must hold at most ~half
of what the bf16 model holds (fp8 is 1 byte a weight, bf16 2) and must not
grow new memory while running (a bf16 copy made lazily in forward()).
"""

from __future__ import annotations

from tutor.catalog import Puzzle
from tutor.grading.verdict import Criterion

MB = 2**20
# fp8 weights plus per-row scales are 0.5x the bf16 bytes; the margin admits small extras
# (scales, CUDA-graph static buffers, a workspace) but no second copy of any weight.
MAX_RESIDENT_VS_BF16 = 0.6
MAX_GROWTH_BYTES = 16 * MB


def criteria(puzzle: Puzzle, result: dict, answer_path=None, profiles=None) -> list[Criterion]:
    memory = result.get("memory") or {}
    resident = memory.get("resident_bytes", {})
    if "mine" not in resident or "bf16_eager" not in resident:
        return [Criterion("fp8 weights", False, "The harness did not report GPU memory per workload.",
                          ["Grade on a CUDA GPU with the current tutor version."])]
    mine, bf16 = resident["mine"], resident["bf16_eager"]
    growth = memory.get("growth_bytes", 0)
    ratio = mine / bf16 if bf16 else float("inf")
    details = [f"your prepare() keeps {mine / MB:.1f} MB on the GPU; the bf16 model keeps {bf16 / MB:.1f} MB "
               f"({ratio:.2f}x, limit {MAX_RESIDENT_VS_BF16:g}x)",
               f"GPU memory grew by {growth / MB:.1f} MB while the workloads ran (limit {MAX_GROWTH_BYTES / MB:.0f} MB)"]
    passed = ratio <= MAX_RESIDENT_VS_BF16 and growth <= MAX_GROWTH_BYTES
    if passed:
        summary = "Weights stay in fp8: half the bytes of bf16 are resident."
    elif ratio > MAX_RESIDENT_VS_BF16:
        summary = "Your workload keeps as many weight bytes as bf16: the speed must come from reading fp8."
    else:
        summary = "GPU memory grew after prepare(): build everything in prepare(), keep weights in fp8."
    return [Criterion("fp8 weights", passed, summary, details)]
