"""What a learner can do to a puzzle (profile, grade), shared by the CLI and the TUI.

Each action builds a harness request, runs it in a subprocess through
tutor.runner, turns the raw result into metrics or a verdict, and records it.
"""

from __future__ import annotations

import hashlib
import random
import statistics
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Callable

from tutor.catalog import Puzzle, all_puzzles
from tutor.errors import EnvironmentProblem, TutorError
from tutor.grading.answer import read_answer
from tutor.grading.diagnosis import check_diagnosis
from tutor.grading.fair_play import check_fair_play
from tutor.grading.floor import check_floor
from tutor.grading.performance import Measured, check_correctness, check_performance
from tutor.grading.puzzle_checks import LearnerProfiles, puzzle_criteria
from tutor.grading.serving import check_serving_correctness, check_serving_floor, check_serving_performance
from tutor.grading.verdict import Criterion, Verdict
from tutor.machine import PEAKS_DIR, require_hardware
from tutor.metrics import ProfileMetrics
from tutor.profilers.registry import get_profiler
from tutor.progress import Progress
from tutor.runner import HarnessRun, RunFailed, run_harness
from tutor.workspace import Workspace

EventHandler = Callable[[dict], None]
Register = Callable[[HarnessRun], None]
PROFILE_WORKLOADS = ("baseline", "mine")


@dataclass
class ProfileOutcome:
    metrics: ProfileMetrics
    run_dir: Path
    trace_path: Path


def code_hash(ws: Workspace, puzzle: Puzzle) -> str:
    """The learner's code, not their answer: a profile stays theirs when they then write answer.toml."""
    digest = hashlib.sha256()
    for name in (n for n in puzzle.editable if n != "answer.toml"):
        path = ws.editable_path(puzzle, name)
        digest.update(name.encode() + b"\0" + (path.read_bytes() if path.exists() else b""))
    return digest.hexdigest()[:16]


def new_run_dir(ws: Workspace, puzzle: Puzzle, mode: str) -> Path:
    return run_dir_named(ws, f"{puzzle.id}-{mode}")


def run_dir_named(ws: Workspace, label: str) -> Path:
    """A run's own folder under the workspace's runs: its time, `label`, and a suffix two runs of a second differ by."""
    stamp = time.strftime("%Y%m%d-%H%M%S")
    return ws.runs_dir / f"{stamp}-{label}-{random.randrange(16**4):04x}"


def _workload_paths(ws: Workspace, puzzle: Puzzle) -> dict[str, str]:
    paths = {name: str(puzzle.workload_path(name)) for name in puzzle.workloads}
    paths["mine"] = str(ws.editable_path(puzzle, "workload.py"))
    return paths


def _base_request(ws: Workspace, puzzle: Puzzle, mode: str, prepare: list[str]) -> dict:
    return {
        "mode": mode,
        "device": puzzle.hardware.device,
        # A multi-GPU puzzle's grade runs each side as a process a GPU (tutor.harness.ranks).
        "ranks": puzzle.hardware.gpus if puzzle.hardware.device == "cuda" and puzzle.hardware.gpus > 1 else 1,
        # Chosen now, never stored in the workspace: outputs cannot be precomputed.
        "seed": random.SystemRandom().randrange(2**31),
        "spec": str(puzzle.folder / "spec.py"),
        "workloads": _workload_paths(ws, puzzle),
        "prepare": prepare,
        "timing": {"warmup": puzzle.timing.warmup, "rounds": puzzle.timing.rounds,
                   **({"loop_calls": list(puzzle.loop_calls)} if puzzle.loop_calls else {})},
        # torch.compile's and triton's caches, kept between runs: the comparators' and the learner's.
        "caches": {"ruler": str(ws.compile_cache("ruler")), "candidate": str(ws.compile_cache("candidate"))},
        # What learner code may not open while it runs (the harness refuses, and the grade fails).
        "protected": {"the reference solution": [str(p.solution_dir) for p in all_puzzles(drafts=True).values()],
                      "the progress database": [str(ws.db_path)],
                      "the comparators' compile cache": [str(ws.compile_cache("ruler"))],
                      "the GPU's measured peaks": [str(PEAKS_DIR)]},
        # Each GPU's best HBM bandwidth and matmul rate (tutor.harness.peaks), for the physical floor.
        "peaks_cache": str(PEAKS_DIR),
        # A serving puzzle's server is replayed against traces, in a grade and in a profile alike.
        **({"serving": vars(puzzle.serving)} if puzzle.serving else {}),
    }


def check_request(ws: Workspace, puzzle: Puzzle, timed: list[str]) -> dict:
    """A check-mode request: the learner's output checked against the oracle, then `timed` interleaved."""
    oracle = puzzle.correctness.oracle
    request = _base_request(ws, puzzle, "check", list(dict.fromkeys([*timed, oracle])))
    request.update(candidate="mine", oracle=oracle, time=timed,
                   correctness={"checks": puzzle.correctness.checks, "output": puzzle.correctness.output,
                                "judged": puzzle.correctness.judged})
    return request


def serving_request(ws: Workspace, puzzle: Puzzle) -> dict:
    """A serving puzzle's grade: the learner's server replayed beside the baseline's (tutor.harness.serving_rounds)."""
    oracle = puzzle.correctness.oracle  # the server whose tokens and throughput the learner's are held to
    request = _base_request(ws, puzzle, "serving", [oracle, "mine"])
    request.update(candidate="mine", oracle=oracle, time=[oracle, "mine"])
    return request


def check_workload_file(ws: Workspace, puzzle: Puzzle) -> None:
    path = ws.editable_path(puzzle, "workload.py")
    if not path.is_file():
        raise TutorError(f"{path} is missing.", f"Run `infprof-tutor reset {puzzle.id}` to restore it.")


def profile(ws: Workspace, puzzle: Puzzle, which: str = "baseline", on_event: EventHandler | None = None,
            register: Register | None = None, profiler: str = "torch") -> ProfileOutcome:
    """Profile one workload; store its metrics as this learner's evidence."""
    if which not in PROFILE_WORKLOADS:
        raise TutorError(f"Cannot profile '{which}'.", "Choose --which baseline or --which mine.")
    chosen = get_profiler(profiler)
    if chosen.runs_workload:
        require_hardware(puzzle)  # before torch is imported for it: one clear answer, not a failed run
    if which == "mine":
        check_workload_file(ws, puzzle)
    run_dir = new_run_dir(ws, puzzle, f"profile-{which}")
    request = _base_request(ws, puzzle, "profile", [which])
    if which == "mine":
        request["candidate"] = "mine"  # learner code: the candidate's compile cache, not the comparators'
    request["profile"] = {"workload": which, "iterations": puzzle.timing.profile_iterations}
    metrics, artifact = chosen.capture(request, run_dir, puzzle, on_event, register)
    metrics.save(run_dir / "metrics.json")
    Progress(ws.db_path).record_profile(puzzle.id, which, code_hash(ws, puzzle), metrics, artifact, run_dir)
    return ProfileOutcome(metrics, run_dir, artifact)




def grade(ws: Workspace, puzzle: Puzzle, on_event: EventHandler | None = None,
          register: Register | None = None) -> Verdict:
    """Correctness, diagnosis and speed of the learner's current files; every attempt is recorded."""
    require_hardware(puzzle)
    check_workload_file(ws, puzzle)
    progress = Progress(ws.db_path)
    hash_before = code_hash(ws, puzzle)
    request = (serving_request(ws, puzzle) if puzzle.serving else
               check_request(ws, puzzle, ["mine", *dict.fromkeys(t.vs for t in puzzle.tiers)]))
    run_dir = new_run_dir(ws, puzzle, "grade")
    try:
        result = run_harness(request, run_dir, puzzle.timing.timeout_s, on_event, register).result
    except RunFailed as failure:
        if not isinstance(failure, EnvironmentProblem) and failure.kind != "cancelled":
            # A crash, hang or OOM is still an attempt: it stays in the learner's history.
            progress.record_attempt(puzzle.id, hash_before, False, "", None, None,
                                    {"error": failure.kind, "message": failure.message}, run_dir)
        raise
    if on_event:
        on_event({"type": "stage", "stage": "grading", "detail": "checking your answer"})

    diagnosis = _diagnose(ws, puzzle, progress)
    if puzzle.serving:  # tokens against the oracle server's, throughput at the latency limit
        correctness = check_serving_correctness(result, puzzle.correctness.max_rel_l2)
        performance, tier, estimates = check_serving_performance(puzzle, result)
        speedups = {"call": {puzzle.correctness.oracle: estimates["throughput"]}, "gpu": {}}
        floor, floor_lines = check_serving_floor(result)
        performance.details += floor_lines
        timings_ms = {}
    else:
        correctness = check_correctness(puzzle, result["checks"], result.get("timed_checks", ()))
        measured = Measured.from_result(result)
        performance, tier, speedups = check_performance(puzzle, measured)
        floor, floor_lines = check_floor(result.get("floor"), measured.call_ms, measured.gpu_ms)
        performance.details += floor_lines
        timings_ms = {k: statistics.median(v) for k, v in result["samples_ms"].items()}
    rules = [*check_fair_play(result.get("violations", ())), *floor,
             *puzzle_criteria(puzzle, result, ws.editable_path(puzzle, "answer.toml"),
                              _learner_profiles(progress, puzzle, hash_before))]
    # Speed only counts when it was earned by the rules: a correct output, the puzzle's own constraints.
    earned = correctness.passed and all(r.passed for r in rules)
    tier = capped(puzzle, tier, rules)
    verdict = Verdict(puzzle.id, [correctness, diagnosis, performance, *rules], tier=tier if earned else "",
                      speedups={k: vars(v) for k, v in speedups["call"].items()},
                      gpu_speedups={k: vars(v) for k, v in speedups["gpu"].items()},
                      timings_ms=timings_ms, facts=result.get("facts") or {},
                      environment=result.get("environment") or {})
    if not verdict.passed:
        verdict.next_hint = _next_hint_preview(puzzle, progress)
    headline = speedups["call"][puzzle.tiers[0].vs]
    progress.record_attempt(puzzle.id, hash_before, verdict.passed, verdict.tier, headline.median, headline.low,
                            verdict.to_dict(), run_dir)
    return verdict


def capped(puzzle: Puzzle, tier: str, rules: list[Criterion]) -> str:
    """The tier, no higher than any rule's cap (puzzle3: no kernel evidence, no tier above bronze)."""
    order = ["", *dict.fromkeys(t.name for t in puzzle.tiers)]
    for rule in rules:
        if rule.caps_tier and order.index(tier) > order.index(rule.caps_tier):
            tier = rule.caps_tier
    return tier


def _diagnose(ws: Workspace, puzzle: Puzzle, progress: Progress) -> Criterion:
    try:
        answer = read_answer(ws.editable_path(puzzle, "answer.toml"))
    except TutorError as e:
        return Criterion("diagnosis", False, e.message, [e.advice])
    # Evidence may come from any profiler the learner ran: each one's newest baseline profile.
    rows = progress.latest_profiles(puzzle.id, "baseline")
    # The torch and nsys timelines share metric names: a value cited from either profile counts.
    values: dict[str, list[float]] = {}
    for row in rows:
        for name, value in ProfileMetrics.from_json(row["metrics_json"]).values.items():
            values.setdefault(name, []).append(value)
    return check_diagnosis(puzzle, answer, values if rows else None)


def _learner_profiles(progress: Progress, puzzle: Puzzle, graded_hash: str) -> LearnerProfiles:
    rows = {(row["workload"], row["profiler"]): row
            for workload in ("baseline", "mine") for row in progress.latest_profiles(puzzle.id, workload)}
    history = progress.own_profiles(puzzle.id, "mine") if puzzle.stages else []
    return LearnerProfiles(rows, graded_hash, history)


def _next_hint_preview(puzzle: Puzzle, progress: Progress) -> str:
    shown = progress.hints_revealed(puzzle.id)
    if shown < len(puzzle.hints):
        return f"A hint is available: infprof-tutor hint {puzzle.id}"
    return ""


def revealed_hints(ws: Workspace, puzzle: Puzzle) -> list[str]:
    """The hints revealed so far, in order (none revealed by reading them)."""
    return list(puzzle.hints[:Progress(ws.db_path).hints_revealed(puzzle.id)])


def reveal_hint(ws: Workspace, puzzle: Puzzle) -> tuple[int, str] | None:
    """The next hint (index, text), recorded as revealed; None when all are out."""
    idx = Progress(ws.db_path).reveal_hint(puzzle.id, len(puzzle.hints))
    return None if idx is None else (idx, puzzle.hints[idx])
