"""A puzzle author's checker: `infprof-tutor dev check [PUZZLE]`.

What a puzzle must be before learners meet it, checked from its folder: its metadata and story
load, its hints and review notes exist, its accepted bottlenecks are in the taxonomy, its reference
diagnosis passes against the baseline profile recorded in recordings/, and (where this machine
can run it) the starter fails to grade, the reference reaches the top tier and every honest
alternative the tier puzzle.toml expects. What this machine cannot run is named as skipped.
Grades run in a throwaway workspace, never the learner's.
"""

from __future__ import annotations

import dataclasses
import tomllib
from dataclasses import dataclass
from typing import Callable, Iterator

from tutor.catalog import NO_TIER, Puzzle, load_puzzle
from tutor.errors import TutorError
from tutor.grading import stages
from tutor.grading.answer import read_answer
from tutor.grading.diagnosis import check_diagnosis
from tutor.metrics import ProfileMetrics
from tutor.taxonomy import bottlenecks

MIN_HINTS = 2


@dataclass(frozen=True)
class Check:
    name: str
    status: str  # "ok", "failed" or "skipped"
    detail: str = ""


def _ok(name: str, detail: str = "") -> Check:
    return Check(name, "ok", detail)


def _failed(name: str, detail: str) -> Check:
    return Check(name, "failed", detail)


def recorded_profiles(puzzle: Puzzle) -> dict[str, ProfileMetrics]:
    """The baseline's profile shipped in the puzzle's recordings/ folder, by the names of its files: the torch
    profile's metrics with those of every other profiler recorded beside it (a kernel puzzle's diagnosis cites
    ncu.*, puzzle23's allocator.*, as study mode reads them all). Nothing where the torch profile is missing."""
    from tutor.profilers.registry import TIMELINE, recording_path
    from tutor.study import read_recording, recorded_profilers

    if not puzzle.recorded_baseline.is_file():
        return {}
    profile = ProfileMetrics.from_json(puzzle.recorded_baseline.read_text())  # a CPU puzzle's too (study's are GPUs')
    others = [p for p in recorded_profilers(puzzle) if p != TIMELINE]
    values = {**profile.values, **{k: v for p in others for k, v in read_recording(puzzle, p)[0].values.items()}}
    names = [puzzle.recorded_baseline.name, *(recording_path(puzzle, p).name for p in others)]
    return {" and ".join(names): dataclasses.replace(profile, values=values)}


def static_checks(puzzle: Puzzle) -> Iterator[Check]:
    """What the folder alone says: no workload runs."""
    try:
        load_puzzle(puzzle.folder)
        yield _ok("metadata", "puzzle.toml and its files load" + (f"; a draft, hidden from learners: {puzzle.draft}"
                                                                  if puzzle.draft else ""))
    except TutorError as e:
        yield _failed("metadata", e.message)
        return
    words = len(puzzle.story.split())
    yield _ok("story", f"{words} words") if words >= 50 else _failed("story", f"{words} words: too short to set a scene")
    short = [i + 1 for i, h in enumerate(puzzle.hints) if len(h.split()) < 8]
    if len(puzzle.hints) < MIN_HINTS or short:
        yield _failed("hints", f"{len(puzzle.hints)} hints (at least {MIN_HINTS}); too short: {short or 'none'}")
    else:
        yield _ok("hints", f"{len(puzzle.hints)}; their order, from where to look to how to fix, is the author's")
    diagnoses = (puzzle.diagnosis, *(st.diagnosis for st in puzzle.stages))  # a capstone's, one a stage
    unknown = [b for d in diagnoses for b in (*d.accepted, *d.supporting) if b not in bottlenecks()]
    yield _failed("bottlenecks", f"not in the taxonomy: {unknown}") if unknown else \
        _ok("bottlenecks", ", then ".join(", ".join(d.accepted) for d in diagnoses))
    yield from _reference_diagnosis(puzzle)
    if puzzle.stages:
        yield from _reference_stages(puzzle)
    yield from _notes(puzzle)
    if puzzle.floor_checked:
        yield _floor(puzzle)
    elif puzzle.serving_floor_checked:
        yield _serving_floor(puzzle)
    if puzzle.hardware.gpus > 1:
        yield _shards(puzzle)


def least_work(puzzle: Puzzle, l2_bytes: int = 50 * 2**20) -> dict:
    """The spec's least work of one forward() (tutor.grading.floor), for a GPU with this much L2 (an H100's)."""
    from tutor.harness.loading import load_module

    # Loaded as the harness loads it; it imports torch: only here, never at the faces' start-up.
    return load_module(puzzle.folder / "spec.py", f"{puzzle.id}_spec", ()).least_work(l2_bytes)


def _shards(puzzle: Puzzle) -> Check:
    """A multi-GPU puzzle says what each rank holds (tutor.harness.shards): shard() gives each rank its part, and
    the GPU memory a rank may keep past it, RANK_SLACK_BYTES, is less than another rank's part, so a rank that
    gathers another's is named. Counted at the spec's real sizes on fake tensors: nothing is allocated."""
    from torch._subclasses.fake_tensor import FakeTensorMode

    from tutor.harness.loading import load_module
    from tutor.harness.shards import mib, tensor_bytes

    world = puzzle.hardware.gpus
    spec = load_module(puzzle.folder / "spec.py", f"{puzzle.id}_spec", ())
    slack = getattr(spec, "RANK_SLACK_BYTES", None)
    if not callable(getattr(spec, "shard", None)) or not isinstance(slack, int):
        return _failed("shards", "spec.py needs shard(weights, rank, world), what each rank is given, and "
                                 "RANK_SLACK_BYTES, the GPU memory a rank may keep past it")
    try:
        with FakeTensorMode():
            held = [tensor_bytes(spec.shard(spec.make_weights(1, "cpu"), rank, world)) for rank in range(world)]
    except Exception as e:  # the author's code: any failure is a finding, not a crash of the checker
        return _failed("shards", f"spec.make_weights or spec.shard failed on fake tensors (no data to read: draw "
                                 f"with Python's random, not from a tensor's values): {type(e).__name__}: {e}")
    if slack >= min(held):
        return _failed("shards", f"RANK_SLACK_BYTES ({mib(slack)}) is not less than a rank's shard "
                                 f"({mib(min(held))}): a rank could keep another rank's part unnamed")
    return _ok("shards", f"{world} ranks hold {', '.join(mib(h) for h in held)}; each may keep {mib(slack)} more")


def _floor(puzzle: Puzzle) -> Check:
    """A GPU puzzle states the least work a forward() needs."""
    try:
        work = least_work(puzzle)
    except AttributeError:
        return _failed("floor", "spec.py has no least_work(l2_bytes): state the bytes and FLOPs a call needs")
    except Exception as e:  # the author's code: any failure is a finding, not a crash of the checker
        return _failed("floor", f"spec.least_work failed: {type(e).__name__}: {e}")
    if not work.get("what") or not any(work.get(key, 0) for key in ("hbm_bytes", "flops", "h2d_bytes", "d2h_bytes")):
        return _failed("floor", f"least_work gave {work}: it needs 'what' and hbm_bytes, flops, h2d_bytes or d2h_bytes "
                                "above 0")
    return _ok("floor", work["what"])


def _serving_floor(puzzle: Puzzle) -> Check:
    """A GPU serving puzzle states the least FLOPs of a trace's requests (tutor.grading.serving.check_serving_floor)."""
    from tutor.harness import serving
    from tutor.harness.loading import load_module

    try:  # loaded as the harness loads it (it imports torch: only here)
        spec = load_module(puzzle.folder / "spec.py", f"{puzzle.id}_spec", ("make_trace",))
        trace = serving.draw_trace(spec, 0)
        flops = serving.least_flops(spec, trace)
    except Exception as e:  # the author's code: any failure is a finding, not a crash of the checker
        return _failed("floor", f"spec.least_flops failed: {type(e).__name__}: {e}")
    if flops is None:
        return _failed("floor", "spec.py has no least_flops(lengths): state the FLOPs a trace's requests need")
    if not flops > 0:
        return _failed("floor", f"least_flops gave {flops} for a trace of {len(trace)} requests: it must be above 0")
    return _ok("floor", f"{flops / 1e12:.3g} TFLOP for a trace of {len(trace)} requests")


def _reference_diagnosis(puzzle: Puzzle) -> Iterator[Check]:
    """The reference answer, with the values of each recorded baseline profile, passes the diagnosis."""
    profiles = recorded_profiles(puzzle)
    wanted = puzzle.recorded_baseline.name
    if not any(name.startswith(wanted) for name in profiles):
        why = f"recordings/{wanted} is missing: record the baseline's profile on its machine"
        # A draft is not shipped yet: what only its machine can record is to do, not a failure.
        yield Check("recordings", "skipped", f"draft ({puzzle.draft}): {why}") if puzzle.draft else _failed("recordings", why)
        return
    yield _ok("recordings", ", ".join(profiles))
    answer = read_answer(puzzle.solution_dir / "answer.toml")
    for name, profile in profiles.items():
        missing = [e.metric for e in answer.evidence if e.metric not in profile.values]
        if missing:
            yield _failed(f"reference diagnosis vs {name}", f"cites metrics the recording lacks: {missing}")
            continue
        cited = dataclasses.replace(answer, evidence=tuple(
            dataclasses.replace(e, value=profile.values[e.metric]) for e in answer.evidence))
        criterion = check_diagnosis(puzzle, cited, profile.values)
        yield Check(f"reference diagnosis vs {name}", "ok" if criterion.passed else "failed",
                    criterion.summary if criterion.passed else "; ".join([criterion.summary, *criterion.details]))


def _reference_stages(puzzle: Puzzle) -> Iterator[Check]:
    """A capstone's later stages: the reference answer's each credited on the recording of the profile that shows
    it (recordings/stage<N>_metrics.json, the values its evidence cites taken from it)."""
    for number, stage, named, name in stages.later_stages(puzzle, read_answer(puzzle.solution_dir / "answer.toml")):
        recorded = puzzle.recorded_stage(number)
        if named is None:
            yield _failed(name, "the reference answer.toml has no [[stages]] table for it")
            continue
        if not recorded.is_file():
            why = (f"recordings/{recorded.name} is missing: record the profile of {stage.shown_by or 'its fix'} "
                   "on its machine")
            yield Check(name, "skipped", f"draft ({puzzle.draft}): {why}") if puzzle.draft else _failed(name, why)
            continue
        values = ProfileMetrics.from_json(recorded.read_text()).values
        missing = [e.metric for e in named.evidence if e.metric not in values]
        if missing:
            yield _failed(name, f"cites metrics {recorded.name} lacks: {missing}")
            continue
        cited = dataclasses.replace(named, evidence=tuple(dataclasses.replace(e, value=values[e.metric])
                                                          for e in named.evidence))
        credited, summary, details = stages.check_stage(puzzle, stage, cited, [values])
        yield Check(name, "ok" if credited else "failed", summary if credited else "; ".join([summary, *details]))


def _notes(puzzle: Puzzle) -> Iterator[Check]:
    measurements = puzzle.folder / "MEASUREMENTS.md"
    if not measurements.is_file():
        yield _failed("measurements", "MEASUREMENTS.md is missing")
    else:
        text = measurements.read_text()
        unnamed = [name for name in puzzle.alternatives if name not in text]
        yield _failed("measurements", f"MEASUREMENTS.md never names {unnamed}") if unnamed else \
            _ok("measurements", "MEASUREMENTS.md names every alternative")
    try:
        notes = tomllib.loads((puzzle.folder / "review.toml").read_text())
    except (OSError, tomllib.TOMLDecodeError) as e:
        yield _failed("review notes", f"review.toml: {e}")
        return
    entries = {"solution": notes.get("solution", {}), **notes.get("alternatives", {})}
    lacking = [n for n in ("solution", *puzzle.alternatives) if not (entries.get(n, {}).get("measured")
                                                                      and entries.get(n, {}).get("profile"))]
    stale = sorted(set(notes.get("alternatives", {})) - set(puzzle.alternatives))
    if lacking or stale:
        yield _failed("review notes", f"no measured/profile for {lacking}; notes for no solution: {stale}")
    else:
        yield _ok("review notes", f"{len(entries)} solutions")


def run_checks(puzzle: Puzzle, on_stage: Callable[[str], None] = lambda _: None) -> Iterator[Check]:
    """Grade the starter, the reference and each alternative on this machine, if it can run the puzzle."""
    from tutor import actions
    from tutor.machine import readiness
    from tutor.reference import ready_to_grade
    from tutor.workspace import scratch_workspace

    names = ["starter fails", f"reference reaches {puzzle.tiers[-1].name}",
             *(f"{name} reaches {tier}" for name, tier in puzzle.alternatives.items())]
    ready = readiness(puzzle)
    if not ready.ok:
        for name in names:
            yield Check(name, "skipped", f"{ready.label}: {ready.why}")
        return
    for which, name in zip(["baseline", "reference", *(f"alternatives/{n}" for n in puzzle.alternatives)], names):
        on_stage(name)
        expected = "" if which == "baseline" else puzzle.tiers[-1].name if which == "reference" else \
            puzzle.alternatives[which.removeprefix("alternatives/")]
        ws = scratch_workspace("infprof-devcheck-")
        try:
            ready_to_grade(ws, puzzle, which)
            verdict = actions.grade(ws, puzzle)
        except TutorError as e:
            yield _failed(name, e.message)
            continue
        got = verdict.tier if verdict.passed else ""
        want = "" if expected == NO_TIER else expected
        passed = (not verdict.passed) if which == "baseline" else got == want and (verdict.passed or want == "")
        yield Check(name, "ok" if passed else "failed", f"tier {got or 'none'}, {_speedup(verdict, puzzle)}")


def _speedup(verdict, puzzle: Puzzle) -> str:
    first = next(iter(verdict.speedups.values()), None)
    unit = "tokens a second" if puzzle.serving else "a call"  # a serving grade's ratio is its throughput's
    return f"{first['median']:.2f}x (lower {first['low']:.2f}x) {unit}" if first else "no speed-up"


def check_puzzle(puzzle: Puzzle, run: bool = True, on_stage: Callable[[str], None] = lambda _: None) -> list[Check]:
    checks = list(static_checks(puzzle))
    if run and all(c.status != "failed" for c in checks[:1]):
        checks += run_checks(puzzle, on_stage)
    return checks
