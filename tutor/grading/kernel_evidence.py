"""A [kernel_evidence] table: why the learner's kernel beats the baseline's, in Nsight Compute's words.

A kernel puzzle's puzzle.toml names the tier it starts at (`[kernel_evidence] required_for`): below it
a fix needs no explaining; from it on, answer.toml cites one ncu metric with its value in the learner's
own ncu profile of the baseline and of the workload being graded, and the two must differ.
"""

from __future__ import annotations

import tomllib
from pathlib import Path

from tutor.catalog import Puzzle
from tutor.grading.diagnosis import value_matches
from tutor.grading.puzzle_checks import LearnerProfiles
from tutor.grading.verdict import Criterion
from tutor.profilers.registry import KERNEL_PROFILER as PROFILER  # the registry's say: Nsight Compute

NAME = "kernel evidence"
# ncu metrics that say *that* a kernel is faster, not *why*: they cannot explain a choice.
NOT_EXPLAINING = {"ncu.kernels_profiled", "ncu.total_us", "ncu.duration_us"}
# Two kernels "differ" in a metric when it moves by more than run-to-run noise (diagnosis allows 10%).
MIN_DIFFERENCE = 0.25


def cited_table(answer_path: Path | None) -> dict:
    """answer.toml's [kernel_evidence], or nothing (an unreadable answer fails the diagnosis already)."""
    try:
        return dict(tomllib.loads(answer_path.read_text()).get("kernel_evidence", {})) if answer_path else {}
    except (OSError, tomllib.TOMLDecodeError):
        return {}


def criterion(puzzle: Puzzle, cited: dict, profiles: LearnerProfiles) -> Criterion:
    names = [t.name for t in puzzle.tiers]
    below = names[names.index(puzzle.kernel_evidence_for) - 1]
    if not cited:  # a fix that earns the first tiers needs no kernel of its own explained
        return Criterion(NAME, True, f"No [kernel_evidence] given: your grade stops at {below}. "
                         f"{puzzle.kernel_evidence_for.capitalize()} and above are for a better kernel, explained "
                         "with Nsight Compute.", [], caps_tier=below)
    metric = cited.get("metric", "")
    how = (f"Profile both with {PROFILER.name}: `infprof-tutor profile {puzzle.id} --profiler {PROFILER.id}` and "
           f"`... --profiler {PROFILER.id} --which mine`; cite one {PROFILER.metric_prefix}* metric and its "
           "value in each.")
    if not str(metric).startswith(PROFILER.metric_prefix) or metric in NOT_EXPLAINING:
        return Criterion(NAME, False, f"[kernel_evidence] names no {PROFILER.name} metric that explains a choice.",
                         [f"metric = {metric!r}: use a {PROFILER.metric_prefix}* metric other than "
                          + ", ".join(sorted(NOT_EXPLAINING)) + " (those say that it is faster, not why)", how])
    details, ok = [], True
    for workload, whose in (("baseline", "the baseline's kernel"), ("mine", "your kernel (mine)")):
        profile = profiles.newest(workload, PROFILER.id)
        said = cited.get(workload)
        if profile is None:
            details.append(f"{whose}: no {PROFILER.name} profile recorded yet.")
            ok = False
        elif not profiles.is_current(workload, PROFILER.id):
            details.append(f"{whose}: your newest {PROFILER.name} profile ran an older workload.py; profile it again.")
            ok = False
        elif metric not in profile.values:
            details.append(f"{whose}: {metric} is not in its {PROFILER.name} profile.")
            ok = False
        elif not isinstance(said, (int, float)) or not value_matches(said, profile.values[metric]):
            details.append(f"{whose}: you cited {said!r}, its profile shows {profile.values[metric]:.4g} "
                           f"({_top_kernel(profile)})  ✗")
            ok = False
        else:
            details.append(f"{whose}: {metric} = {said:g}, matches its profile ({_top_kernel(profile)}).")
    if not ok:
        return Criterion(NAME, False, f"Your kernel evidence does not hold up against your {PROFILER.name} profiles.",
                         [*details, how])
    base, mine = cited["baseline"], cited["mine"]
    if abs(base - mine) <= MIN_DIFFERENCE * max(abs(base), abs(mine)):
        details.append(f"{metric} differs by less than {MIN_DIFFERENCE:.0%} between the kernels: "
                       "it does not tell them apart. Which metric does?")
        return Criterion(NAME, False, "That metric is the same for both kernels.", details)
    return Criterion(NAME, True, f"{metric} tells the baseline's kernel and yours apart, in your own profiles.", details)


def _top_kernel(profile) -> str:
    return profile.kernels[0].get("name", "?") if profile.kernels else "no kernels"
