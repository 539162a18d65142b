"""puzzle23: the speed must not come from memory past the budget.

Without its torch.cuda.empty_cache() the baseline is faster and holds more memory, so speed alone would pass a
learner who gave the budget up. What each process held is read by the harness over every call of the grade
(tutor.harness.allocator_peak): its caching allocator's peak reserve, plus the most GPU memory it held outside that
allocator at any read (NVML's count for the process, less the reserve: its CUDA context, and any memory taken
past torch's allocator). Of that, what both processes hold whatever the workload does is set aside, by the
baseline's process's figures: the CUDA context it had before any workload loaded, and the harness's own inputs at
their most. The rest is the workload's, and the learner's may be at most the spec's MEMORY_SLACK more than the
baseline's on the same inputs: the slack is a share of what the workload holds, not of what the harness and CUDA
hold for it. Where NVML cannot count a process alone, its allocator's peak stands alone, less the harness's
inputs. The learner's figure is read in its own process; NVML's count of that process, read by the coordinator
between its calls, bounds it from below.
"""

from __future__ import annotations

from tutor.catalog import Puzzle
from tutor.grading.verdict import Criterion
from tutor.harness.process_memory import ALONE as NVML  # torch-free, as a grader must be

MB = 2**20
QUICK = True  # its criterion reads only what a quick check's run reports: watch mode applies it too
# What `show` and the app say of the rule, under "How it is graded" (tutor.brief).
RULE = ("Memory budget", "your workload may hold no more GPU memory than the baseline holds on the same inputs, "
        "`MEMORY_SLACK` (spec.py) more at most: its process's caching allocator at its peak over every call of the "
        "grade and what the process holds outside it, both read by the harness itself, less what every process "
        "holds whatever its workload (its CUDA context, the harness's inputs). A workload that resets the "
        "allocator's peak statistics is refused.")



def held(peak: dict, with_outside: bool) -> int:
    """The most a process held: its allocator's peak reserve, and the most it held outside it at any read."""
    return peak["peak_reserved_bytes"] + (peak["outside_bytes"]["most"] if with_outside else 0)


def common(peak: dict, with_outside: bool) -> int:
    """What a process holds whatever its workload: the harness's inputs at their most, and (where the outside is
    counted) its CUDA context before any workload loaded."""
    return peak.get("harness_bytes", 0) + (peak["outside_bytes"]["at_setup"] if with_outside else 0)


def criteria(puzzle: Puzzle, result: dict, answer_path=None, profiles=None) -> list[Criterion]:
    peaks = (result.get("memory") or {}).get("allocator_peak")
    if not peaks:
        return [Criterion("memory budget", False, "The grade reported no allocator peak for your process or the "
                          "baseline's.", ["Grade on a CUDA GPU with the current tutor version."])]
    if peaks["theirs"].get("outside_source") == NVML and peaks["mine"].get("outside_source") != NVML:
        return [Criterion("memory budget", False, "NVML counted the baseline's process but lost count of yours on "
                          "the same GPU: what your process held cannot be judged.",
                          ["A workload must leave NVML, and the harness's reading of it, as they are while it is "
                           "graded.", f"your process's memory was counted for "
                           f"{peaks['mine'].get('outside_source', 'nothing')}"])]
    counted = all(peaks[side].get("outside_source") == NVML for side in ("mine", "theirs"))
    # Set aside by the baseline's figures for both: the same seeds make the same inputs, and the same build the same
    # context, and the baseline's process is out of the learner's code's reach.
    shared = common(peaks["theirs"], counted)
    mine, theirs = (held(peaks[side], counted) - shared for side in ("mine", "theirs"))
    # NVML's count of the learner's process, read by the coordinator between its calls: out of its code's reach,
    # and never more than it held, so it can only raise a figure that code lowered (tutor.harness.process_memory).
    observed = ((result.get("memory") or {}).get("observed_bytes") or {}).get("mine") if counted else None
    if observed:
        mine = max(mine, observed - shared)
    slack = peaks["theirs"]["slack"]
    budget = theirs * (1 + slack)
    details = [f"your workload held {mine / MB:.0f} MB at its most; the baseline's {theirs / MB:.0f} MB on the same "
               f"inputs (budget {budget / MB:.0f} MB: {slack:.0%} more at most)"]
    for side, name in (("mine", "your process"), ("theirs", "the baseline's process")):
        peak, outside = peaks[side], peaks[side].get("outside_bytes") or {}
        line = (f"{name}: its caching allocator reserved {peak['peak_reserved_bytes'] / MB:.0f} MB at its peak, "
                f"the harness's inputs {peak.get('harness_bytes', 0) / MB:.0f} MB of it at their most")
        if outside:
            line += (f"; GPU memory outside that allocator {outside['at_setup'] / MB:.0f} MB at set-up (its CUDA "
                     f"context), {outside['least'] / MB:.0f}-{outside['most'] / MB:.0f} MB over the calls (counted "
                     f"for {peak.get('outside_source', 'the whole device')})")
        details.append(line)
    if observed:
        details.append(f"your process as NVML counted it between its calls, read outside it: {observed / MB:.0f} MB "
                       "at most")
    if not counted:
        details.append("NVML could not count each process's own memory here: the allocators' peaks are compared "
                       "alone, and memory held outside torch's allocator is not judged.")
    if mine <= budget:
        return [Criterion("memory budget", True, f"Inside the budget: {mine / MB:.0f} MB of {budget / MB:.0f} MB.",
                          details)]
    return [Criterion("memory budget", False,
                      f"Over the budget: your workload held {mine / MB:.0f} MB at its most, "
                      f"{mine / max(theirs, 1):.2f}x the baseline's. The other model on this GPU would not have found "
                      "its memory.",
                      details + ["Profile your workload's memory (`infprof-tutor profile puzzle23 --profiler memory "
                                 "--which mine`): allocator.fragmentation_mb is what the allocator kept past what "
                                 "tensors used; memory taken outside torch's allocator counts too."])]
