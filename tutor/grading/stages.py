"""A capstone's later stages: each bottleneck that fixing the one before it reveals, named and backed by numbers
from a profile of the learner's own workload that shows it.

The first stage is the puzzle's [diagnosis], checked against the baseline's profile like any puzzle's. Each
later stage (puzzle.toml's [[stages]]) is named in answer.toml's [[stages]], in order, and its evidence must match
one profile the learner ran of their own workload (`profile PUZZLE --which mine`, at any version of their code:
the stage showed in code they have since fixed) in which the stage's `shows` conditions hold, so a number read
from a profile where that bottleneck was not the one showing does not count. A stage not credited passes, but
caps the tier below the one it unlocks: the grade credits each stage in turn.
"""

from __future__ import annotations

import dataclasses
import operator

from collections.abc import Iterator

from tutor.catalog import STAGE_CONDITION, Puzzle, Stage
from tutor.grading.answer import Answer, StageAnswer
from tutor.grading.diagnosis import check_diagnosis
from tutor.grading.verdict import Criterion
from tutor.metrics import ProfileMetrics

COMPARE = {">": operator.gt, "<": operator.lt}


def unmet(conditions: tuple[str, ...], values: dict[str, float]) -> list[str]:
    """The conditions a profile's values do not meet (a metric it lacks meets none)."""
    missed = []
    for condition in conditions:
        metric, op, bound = STAGE_CONDITION.match(condition).groups()
        if metric not in values or not COMPARE[op](values[metric], float(bound)):
            shown = f"{values[metric]:.4g}" if metric in values else "absent"
            missed.append(f"{condition} (this profile: {shown})")
    return missed


def later_stages(puzzle: Puzzle, answer: Answer | None) -> Iterator[tuple[int, Stage, StageAnswer | None, str]]:
    """Each later stage (numbered from 2: the first is [diagnosis]'s), the answer's [[stages]] table for it if it
    has one, and the stage's name as verdicts and dev check show it."""
    given = answer.stages if answer else ()
    for number, stage in enumerate(puzzle.stages, start=2):
        yield number, stage, given[number - 2] if len(given) > number - 2 else None, f"stage {number}: {stage.name}"


def stage_criteria(puzzle: Puzzle, answer: Answer | None, own_profiles: list[dict]) -> list[Criterion]:
    """One criterion per later stage: passed always, capping the tier where the stage is not credited."""
    order = list(dict.fromkeys(t.name for t in puzzle.tiers))
    profiles = [ProfileMetrics.from_json(row["metrics_json"]).values for row in own_profiles]
    criteria = []
    for _, stage, named, label in later_stages(puzzle, answer):
        credited, summary, details = check_stage(puzzle, stage, named, profiles)
        cap = "" if credited else order[order.index(stage.tier) - 1]
        criteria.append(Criterion(label, True, summary, details, caps_tier=cap))
    return criteria


def check_stage(puzzle: Puzzle, stage: Stage, named: StageAnswer | None,
                profiles: list[dict[str, float]]) -> tuple[bool, str, list[str]]:
    """Whether a stage is credited on any one of the profiles' values; a summary and the details that say why."""
    locked = f"Tiers from {stage.tier} on wait for it."
    if named is None or not named.bottleneck:
        return False, f"Not named yet. {locked}", [
            "Profile your own workload once the bottleneck before it is fixed (infprof-tutor profile "
            f"{puzzle.id} --which mine), then name what it shows in answer.toml's [[stages]] table for this "
            "stage, with [[stages.evidence]] from that profile."]
    as_stage = dataclasses.replace(puzzle, diagnosis=stage.diagnosis)
    cited = Answer(named.bottleneck, named.evidence)
    if not profiles:
        return False, f"No profile of your workload to check your evidence against. {locked}", [
            f"Profile your workload while this bottleneck shows (infprof-tutor profile {puzzle.id} --which mine) "
            "and cite its numbers."]
    best = None
    for values in profiles:
        verdict = check_diagnosis(as_stage, cited, values, profile="own workload's")
        missed = unmet(stage.shows, values)
        if verdict.passed and not missed:
            return True, "Right bottleneck, backed by a profile of your workload that shows it.", verdict.details
        rank = (verdict.passed, -len(missed))
        if best is None or rank > best[0]:
            best = (rank, verdict, missed)
    _, verdict, missed = best
    details = list(verdict.details)
    if verdict.passed:  # the numbers match a profile, but not one in which this stage's bottleneck shows
        details.append("The profile your numbers match does not show this stage's bottleneck: "
                       + "; ".join(missed) + ". Cite a profile of your workload taken while it did.")
        return False, f"Your evidence comes from a profile where this bottleneck does not show. {locked}", details
    return False, f"{verdict.summary} {locked}", details
