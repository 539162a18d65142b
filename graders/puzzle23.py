"""puzzle23: the speed must not come from memory past the budget.

Without its torch.cuda.empty_cache() the baseline is faster and holds several times the memory, so speed alone
would pass a learner who gave the budget up. Each process's caching allocator is read at its peak over every call
of the grade (tutor.harness.allocator_peak): the learner's may reserve at most the spec's MEMORY_SLACK more than
the baseline's did on the same inputs.
"""

from __future__ import annotations

from tutor.catalog import Puzzle
from tutor.grading.verdict import Criterion

MB = 2**20
QUICK = True  # its criterion reads only what a quick check's run reports: watch mode applies it too
# What `show` and the app say of the rule, under "How it is graded" (tutor.brief).
RULE = ("Memory budget", "your process may reserve no more GPU memory than the baseline's process on the same "
        "inputs, `MEMORY_SLACK` (spec.py) more at most: the caching allocator's peak over every call of the grade, "
        "which the harness reads itself (a workload that resets the allocator's peak statistics is refused).")


def criteria(puzzle: Puzzle, result: dict, answer_path=None, profiles=None) -> list[Criterion]:
    peaks = (result.get("memory") or {}).get("allocator_peak")
    if not peaks:
        return [Criterion("memory budget", False, "The grade reported no allocator peak for your process or the "
                          "baseline's.", ["Grade on a CUDA GPU with the current tutor version."])]
    mine, theirs = peaks["mine"]["peak_reserved_bytes"], peaks["theirs"]["peak_reserved_bytes"]
    budget = theirs * (1 + peaks["theirs"]["slack"])
    details = [f"your process reserved {mine / MB:.0f} MB at its peak; the baseline's {theirs / MB:.0f} MB on the same "
               f"inputs (budget {budget / MB:.0f} MB: {peaks['theirs']['slack']:.0%} more at most)"]
    for side, name in (("mine", "your process's"), ("theirs", "the baseline process's")):  # recorded, not judged yet
        outside = peaks[side].get("outside_bytes")
        if outside:
            details.append(f"GPU memory outside {name} allocator: {outside['at_setup'] / MB:.0f} MB at "
                           f"set-up, {outside['least'] / MB:.0f}-{outside['most'] / MB:.0f} MB over the calls")
    if mine <= budget:
        return [Criterion("memory budget", True, f"Inside the budget: {mine / MB:.0f} MB of {budget / MB:.0f} MB.",
                          details)]
    return [Criterion("memory budget", False,
                      f"Over the budget: your process held {mine / MB:.0f} MB at its peak, {mine / theirs:.2f}x the "
                      "baseline's. The other model on this GPU would not have found its memory.",
                      details + ["Profile your workload's memory (`infprof-tutor profile puzzle23 --profiler memory "
                                 "--which mine`): allocator.fragmentation_mb is what the allocator kept past what "
                                 "tensors used."])]
