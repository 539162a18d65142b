"""The runs the TUI can start (grade, quick check, profile with a profiler) and the one call that does each.

Runs go through tutor.actions exactly as the CLI's do; this module only names
them, lists the harness stages each one passes through, and turns every way a
run can end into either a result or a `TutorError` the UI can show.
"""

from __future__ import annotations

import traceback
from dataclasses import dataclass
from typing import TYPE_CHECKING, Callable

from tutor.catalog import Puzzle
from tutor.errors import EnvironmentProblem, TutorError
from tutor.machine import RUN_BLOCKERS, Machine, readiness
from tutor.profilers.registry import get_profiler, profiler_name
from tutor.workspace import Workspace

if TYPE_CHECKING:  # the grading stack loads only when a run starts
    from tutor.grading.answer import AnswerError
    from tutor.grading.verdict import Verdict

# Harness and tutor stage names (tutor.protocol.STAGES) -> the short label shown in the progress row.
STAGE_LABELS = {
    "starting": "start", "importing": "import", "preparing": "prepare", "warmup": "warm-up",
    "checking": "check", "timing": "time", "replaying": "replays", "serving": "memory run", "profiling": "profile",
    "extracting": "extract", "grading": "grade",
}
WORKLOAD_NAMES = {"baseline": "the baseline", "mine": "your workload"}


@dataclass(frozen=True)
class Graded:
    """A grade's verdict, and the reason answer.toml could not be read when that failed its diagnosis."""

    verdict: Verdict
    answer: AnswerError | None = None


@dataclass(frozen=True)
class RunKind:
    key: str  # "grade", "check" (the quick check) or "profile-<which>-<profiler>"
    title: str  # what the progress panel says is happening
    stages: tuple[str, ...]
    which: str = ""  # the workload a profile run profiles
    profiler: str = ""  # the profiler a profile run uses


_GRADE_STAGES = ("starting", "importing", "preparing", "warmup", "checking", "timing", "grading")
_PROFILE_STAGES = ("starting", "importing", "preparing", "warmup", "profiling", "extracting")
GRADE = RunKind("grade", "Grading", _GRADE_STAGES)
# A serving puzzle's grade replays a trace in pairs instead of checking and timing calls.
SERVING_GRADE = RunKind("grade", "Grading", ("starting", "importing", "preparing", "replaying", "grading"))
CHECK = RunKind("check", "Quick check", _GRADE_STAGES[:-1])


def run_kind(key: str, puzzle: Puzzle) -> RunKind:
    """`grade`, `check`, `profile-<which>` (the puzzle's first profiler) or `profile-<which>-<profiler>`."""
    if key == "check":
        return CHECK
    if key == "grade":
        return SERVING_GRADE if puzzle.serving else GRADE
    _, which, *rest = key.split("-")
    profiler = rest[0] if rest else puzzle.profilers[0]
    title = f"Profiling {WORKLOAD_NAMES[which]}"
    if profiler != puzzle.profilers[0]:
        title += f" with {profiler_name(profiler)}"
    return RunKind(f"profile-{which}-{profiler}", title, _PROFILE_STAGES, which, profiler)


def preflight(kind: RunKind, puzzle: Puzzle, machine: Machine | None) -> TutorError | None:
    """Why this machine cannot do this run at all, before a subprocess is spent on it.

    The machine and the packages the workload imports stop every run; a profiler stops only a profile
    taken with it (a grade without puzzle3's ncu still runs, and says which evidence it lacks), and a
    package older than the tutor asks for is the harness's to find out.
    """
    blockers = [b for b in readiness(puzzle, machine).blockers if b.label in RUN_BLOCKERS]
    if blockers:
        return EnvironmentProblem(f"{puzzle.id} cannot run on this machine ({blockers[0].label}).",
                                  " ".join(b.why for b in blockers))
    if not kind.profiler:
        return None
    try:
        return get_profiler(kind.profiler).problem(machine)
    except TutorError as e:  # not a profiler the tutor knows
        return e


def execute(kind: RunKind, ws: Workspace, puzzle: Puzzle, on_event: Callable[[dict], None],
            register: Callable, watching: bool = False) -> object:
    """Run to the end (blocking: call it from a worker thread); returns Graded, a QuickCheck or a ProfileOutcome.
    `watching`: a quick check of watch mode, answered by the session's ruler keeper once it is ready.

    Raises TutorError for every failure, including bugs, so the app never shows a traceback.
    """
    from tutor import actions  # the grading stack loads only when a run starts

    on_event({"type": "stage", "stage": "starting", "detail": "starting the workload process"})
    try:
        if kind.key == "grade":
            from tutor.grading.answer import unreadable_answer

            verdict = actions.grade(ws, puzzle, on_event, register)
            return Graded(verdict, unreadable_answer(verdict, ws.editable_path(puzzle, "answer.toml")))
        if kind.key == "check":
            from tutor.quick_check import quick_check, watch_keeper

            return quick_check(ws, puzzle, on_event, register, watch_keeper(ws, puzzle) if watching else None)
        return actions.profile(ws, puzzle, kind.which, on_event, register, profiler=kind.profiler)
    except TutorError:
        raise
    except ValueError as e:  # an unreadable trace names itself in the message
        raise TutorError(str(e), "Run it again; if it keeps failing, the output tail says more.",
                         traceback.format_exc()) from e
    except Exception as e:
        raise TutorError(f"infprof-tutor hit an unexpected {type(e).__name__}: {e}",
                         "This is a bug in infprof-tutor; please report it with the output tail.",
                         traceback.format_exc()) from e
