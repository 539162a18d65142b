"""puzzle3: fp8 weights, a true account of GemLite's choice, and Nsight Compute evidence for a better one.

The harness asks the puzzle's spec for `facts` after timing: the matmul type GemLite
dispatched to at M=128, the config triton ran and whether it came from GemLite's
shipped table or from autotuning, read from GemLite's own caches in this very run,
on this GPU. answer.toml's [autotune] table must report the same.

Its [kernel_evidence] table explains why the learner's kernel beats GemLite's: one
Nsight Compute metric, with its value in the learner's own ncu profile of the
baseline (GemLite's kernel) and of their current workload, that tells the two apart.
"""

from __future__ import annotations

import tomllib

from graders import puzzle1
from tutor.catalog import Puzzle
from tutor.grading.diagnosis import value_matches
from tutor.grading.puzzle_checks import LearnerProfiles
from tutor.grading.verdict import Criterion

REPORTED = {"block_size_m": "BLOCK_SIZE_M", "block_size_n": "BLOCK_SIZE_N", "block_size_k": "BLOCK_SIZE_K"}
# ncu metrics that say *that* a kernel is faster, not *why*: they cannot explain a choice.
NOT_EXPLAINING = {"ncu.kernels_profiled", "ncu.total_us", "ncu.duration_us"}
# Two kernels "differ" in a metric when it moves by more than run-to-run noise (diagnosis allows 10%).
MIN_DIFFERENCE = 0.25


def criteria(puzzle: Puzzle, result: dict, answer_path=None, profiles=None) -> list[Criterion]:
    try:
        answer = tomllib.loads(answer_path.read_text()) if answer_path else {}
    except (OSError, tomllib.TOMLDecodeError) as e:
        unreadable = Criterion("autotune report", False, f"answer.toml could not be read: {e}", [])
        return [*puzzle1.criteria(puzzle, result, answer_path), unreadable]
    return [*puzzle1.criteria(puzzle, result, answer_path),
            autotune_report(result.get("facts"), answer.get("autotune", {})),
            kernel_evidence(answer.get("kernel_evidence", {}), profiles or LearnerProfiles())]


def autotune_report(facts: dict | None, reported: dict) -> Criterion:
    name = "autotune report"
    if not facts or not facts.get("config"):
        return Criterion(name, False, "The run reported no GemLite choice to check against.",
                         ["Grade on a CUDA GPU with gemlite installed and the current tutor version."])
    truth = answer_from_facts(facts)["autotune"]
    details, wrong = [], []
    for key, actual in truth.items():
        said = reported.get(key)
        ok = said == actual
        details.append(f"{key}: you said {said!r}, GemLite ran {actual!r}" + ("" if ok else "  ✗"))
        if not ok:
            wrong.append(key)
    details.append(f"config key GemLite looked up: {facts.get('config_key')}")
    if not wrong:
        return Criterion(name, True, "Your account of GemLite's choice matches its cache.", details)
    return Criterion(name, False, f"{len(wrong)} of {len(truth)} [autotune] entries differ from what GemLite ran.",
                     details)


def answer_from_facts(facts: dict) -> dict:
    """The true [autotune] table for a run's facts (what a failed report's details show the learner)."""
    return {"autotune": {"matmul_type": facts["matmul_type"], "source": facts.get("source"),
                         **{k: facts["config"].get(v) for k, v in REPORTED.items()}}}


def kernel_evidence(cited: dict, profiles: LearnerProfiles) -> Criterion:
    name = "kernel evidence"
    if not cited:  # a graph around GemLite's own kernels earns bronze; a better kernel choice must be explained
        return Criterion(name, True, "No [kernel_evidence] given: your grade stops at bronze. Silver and gold are "
                         "for a better kernel choice than GemLite's, explained with Nsight Compute.", [], caps_tier="bronze")
    metric = cited.get("metric", "")
    how = ("Profile both with Nsight Compute: `infprof-tutor profile puzzle3 --profiler ncu` and "
           "`... --profiler ncu --which mine`; cite one ncu.* metric and its value in each.")
    if not str(metric).startswith("ncu.") or metric in NOT_EXPLAINING:
        return Criterion(name, False, "[kernel_evidence] names no Nsight Compute metric that explains a choice.",
                         [f"metric = {metric!r}: use an ncu.* metric other than "
                          + ", ".join(sorted(NOT_EXPLAINING)) + " (those say that it is faster, not why)", how])
    details, ok = [], True
    for workload, whose in (("baseline", "GemLite's kernel (baseline)"), ("mine", "your kernel (mine)")):
        profile = profiles.newest(workload, "ncu")
        said = cited.get(workload)
        if profile is None:
            details.append(f"{whose}: no Nsight Compute profile recorded yet.")
            ok = False
        elif not profiles.is_current(workload, "ncu"):
            details.append(f"{whose}: your newest ncu profile ran an older workload.py; profile it again.")
            ok = False
        elif metric not in profile.values:
            details.append(f"{whose}: {metric} is not in its ncu profile.")
            ok = False
        elif not isinstance(said, (int, float)) or not value_matches(said, profile.values[metric]):
            details.append(f"{whose}: you cited {said!r}, its profile shows {profile.values[metric]:.4g} "
                           f"({_top_kernel(profile)})  ✗")
            ok = False
        else:
            details.append(f"{whose}: {metric} = {said:g}, matches its profile ({_top_kernel(profile)}).")
    if not ok:
        return Criterion(name, False, "Your kernel evidence does not hold up against your ncu profiles.", [*details, how])
    base, mine = cited["baseline"], cited["mine"]
    if abs(base - mine) <= MIN_DIFFERENCE * max(abs(base), abs(mine)):
        details.append(f"{metric} differs by less than {MIN_DIFFERENCE:.0%} between the kernels: "
                       "it does not tell them apart. Which metric does?")
        return Criterion(name, False, "That metric is the same for both kernels.", details)
    return Criterion(name, True, f"{metric} tells GemLite's kernel and yours apart, in your own profiles.", details)


def _top_kernel(profile) -> str:
    return profile.kernels[0].get("name", "?") if profile.kernels else "no kernels"
