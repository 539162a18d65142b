"""Diagnosis: the named bottleneck is the real one, and every cited number is in the learner's own profile.

Cited values must match the learner's latest baseline profile within
tolerance: numbers copied from elsewhere, or made up, do not pass.
"""

from __future__ import annotations

import fnmatch
import math

from tutor.catalog import Puzzle
from tutor.grading.answer import Answer
from tutor.grading.verdict import Criterion
from tutor.taxonomy import bottlenecks

REL_TOLERANCE = 0.10  # profiles of the same code differ by a few percent run to run
ABS_TOLERANCE = 0.02  # for shares and fractions near zero


def value_matches(cited: float, measured: float) -> bool:
    return math.isclose(cited, measured, rel_tol=REL_TOLERANCE, abs_tol=ABS_TOLERANCE)


def check_diagnosis(puzzle: Puzzle, answer: Answer, profile_values: dict[str, float | list[float]] | None,
                    profile: str = "baseline", whose: str = "your") -> Criterion:
    """`profile_values` maps a metric to its value, or to its values in each profiler's profile (any may match);
    `profile` says which workload's profile it is (a capstone's later stage: one of the learner's own workload), and
    `whose` whose it is in the verdict's words ("the recorded": study mode's recording, not the learner's)."""
    details: list[str] = []
    known = bottlenecks()
    named = answer.bottleneck
    if named not in known:
        return Criterion("diagnosis", False, f"'{named}' is not a bottleneck id.",
                         ["Valid ids: " + ", ".join(known), "See them explained: infprof-tutor taxonomy"])
    if named in puzzle.diagnosis.accepted:
        details.append(f"bottleneck '{named}': right.")
        named_ok = True
    elif named in puzzle.diagnosis.supporting:
        details.append(f"bottleneck '{named}': real, but a symptom here. What causes it?")
        named_ok = False
    else:
        details.append(f"bottleneck '{named}': not what limits this workload. Look at where the time goes.")
        named_ok = False

    if profile_values is None:
        details.append(f"No {profile} profile recorded yet: run `infprof-tutor profile {puzzle.id}` and cite its numbers.")
        return Criterion("diagnosis", False, "No profile to check your evidence against.", details)

    relevant, backed = 0, 0
    for ev in answer.evidence:
        if ev.metric not in profile_values:
            details.append(f"evidence {ev.metric}: not a metric of {whose} {profile} profile.")
            continue
        measured = profile_values[ev.metric]
        measured = measured if isinstance(measured, list) else [measured]
        if not any(value_matches(ev.value, m) for m in measured):
            shown = " or ".join(f"{m:.4g}" for m in measured)
            details.append(f"evidence {ev.metric} = {ev.value:g}: {whose} profile shows {shown}.")
            continue
        backed += 1
        if any(fnmatch.fnmatchcase(ev.metric, pat) for pat in puzzle.diagnosis.relevant_metrics):
            relevant += 1
            details.append(f"evidence {ev.metric} = {ev.value:g}: matches {whose} profile.")
        else:
            details.append(f"evidence {ev.metric} = {ev.value:g}: true, but it does not point at the bottleneck.")
    needed = puzzle.diagnosis.min_evidence
    evidence_ok = relevant >= needed and backed == len(answer.evidence)
    telling = puzzle.diagnosis.telling.get(named, ())
    if named_ok and telling and not any(
            ev.metric in profile_values and any(fnmatch.fnmatchcase(ev.metric, pat) for pat in telling)
            for ev in answer.evidence):
        others = [b for b in puzzle.diagnosis.accepted if b != named]
        details.append(f"None of your numbers tells '{named}' from {', '.join(repr(o) for o in others)}: cite the "
                       f"one that shows it ({', '.join(telling)}).")
        evidence_ok = False
    if relevant < needed:
        details.append(f"Cite at least {needed} relevant number(s) from {whose} profile ({relevant} so far).")
    passed = named_ok and evidence_ok
    summary = f"Right bottleneck, backed by {whose} profile." if passed else (
        "Wrong bottleneck." if not named_ok else f"Your evidence does not hold up against {whose} profile.")
    return Criterion("diagnosis", passed, summary, details)
