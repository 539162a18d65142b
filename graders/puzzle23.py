"""puzzle23: the speed must not come from memory past the budget.

Without its torch.cuda.empty_cache() the baseline is faster and holds more memory, so speed alone would pass a
learner who gave the budget up. What each process held is read by the harness over every call of the grade
(tutor.harness.allocator_peak): its caching allocator's peak reserve, plus the most GPU memory it held outside that
allocator at any read (NVML's count for the process, less the reserve: its CUDA context, and any memory taken
past torch's allocator). The learner's may hold at most the spec's MEMORY_SLACK more than the baseline's did on
the same inputs. Where NVML cannot count a process alone, the allocator's peaks are compared by themselves.
"""

from __future__ import annotations

from tutor.catalog import Puzzle
from tutor.grading.verdict import Criterion

MB = 2**20
QUICK = True  # its criterion reads only what a quick check's run reports: watch mode applies it too
# What `show` and the app say of the rule, under "How it is graded" (tutor.brief).
RULE = ("Memory budget", "your process may hold no more GPU memory than the baseline's process on the same "
        "inputs, `MEMORY_SLACK` (spec.py) more at most: the caching allocator's peak over every call of the grade "
        "and what the process holds outside it, both read by the harness itself (a workload that resets the "
        "allocator's peak statistics is refused).")


NVML = "this process (NVML)"  # tutor.harness.allocator_peak.ALONE (that module imports torch; a grader does not)


def held(peak: dict, with_outside: bool) -> int:
    """The most a process held: its allocator's peak reserve, and the most it held outside it at any read."""
    return peak["peak_reserved_bytes"] + (peak["outside_bytes"]["most"] if with_outside else 0)


def criteria(puzzle: Puzzle, result: dict, answer_path=None, profiles=None) -> list[Criterion]:
    peaks = (result.get("memory") or {}).get("allocator_peak")
    if not peaks:
        return [Criterion("memory budget", False, "The grade reported no allocator peak for your process or the "
                          "baseline's.", ["Grade on a CUDA GPU with the current tutor version."])]
    counted = all(peaks[side].get("outside_source") == NVML for side in ("mine", "theirs"))
    if peaks["theirs"].get("outside_source") == NVML and peaks["mine"].get("outside_source") != NVML:
        return [Criterion("memory budget", False, "NVML counted the baseline's process but lost count of yours on "
                          "the same GPU: what your process held cannot be judged.",
                          ["A workload must leave NVML and its Python binding (pynvml) as they are while it is "
                           "graded.", f"your process's memory was counted for "
                           f"{peaks['mine'].get('outside_source', 'nothing')}"])]
    mine, theirs = held(peaks["mine"], counted), held(peaks["theirs"], counted)
    slack = peaks["theirs"]["slack"]
    budget = theirs * (1 + slack)
    details = [f"your process held {mine / MB:.0f} MB at its most; the baseline's {theirs / MB:.0f} MB on the same "
               f"inputs (budget {budget / MB:.0f} MB: {slack:.0%} more at most)"]
    for side, name in (("mine", "your process"), ("theirs", "the baseline's process")):
        peak, outside = peaks[side], peaks[side].get("outside_bytes") or {}
        line = f"{name}: its caching allocator reserved {peak['peak_reserved_bytes'] / MB:.0f} MB at its peak"
        if outside:
            line += (f"; GPU memory outside that allocator {outside['at_setup'] / MB:.0f} MB at set-up, "
                     f"{outside['least'] / MB:.0f}-{outside['most'] / MB:.0f} MB over the calls (counted for "
                     f"{peak.get('outside_source', 'the whole device')})")
        details.append(line)
    if not counted:
        details.append("NVML could not count each process's own memory here: the allocators' peaks are compared "
                       "alone, and memory held outside torch's allocator is not judged.")
    if mine <= budget:
        return [Criterion("memory budget", True, f"Inside the budget: {mine / MB:.0f} MB of {budget / MB:.0f} MB.",
                          details)]
    return [Criterion("memory budget", False,
                      f"Over the budget: your process held {mine / MB:.0f} MB at its most, {mine / theirs:.2f}x the "
                      "baseline's. The other model on this GPU would not have found its memory.",
                      details + ["Profile your workload's memory (`infprof-tutor profile puzzle23 --profiler memory "
                                 "--which mine`): allocator.fragmentation_mb is what the allocator kept past what "
                                 "tensors used; memory taken outside torch's allocator counts too."])]
