"""The runs the TUI can start (grade, profile baseline, profile mine) and the one call that does each.

Runs go through tutor.actions exactly as the CLI's do; this module only names
them, lists the harness stages each one passes through, and turns every way a
run can end into either a result or a `TutorError` the UI can show.
"""

from __future__ import annotations

import traceback
from dataclasses import dataclass
from typing import Callable

from tutor.catalog import Puzzle
from tutor.errors import EnvironmentProblem, TutorError
from tutor.machine import Machine, readiness
from tutor.workspace import Workspace

# Harness and tutor stage names (tutor.protocol.STAGES) -> the short label shown in the progress row.
STAGE_LABELS = {
    "starting": "start", "importing": "import", "preparing": "prepare", "warmup": "warm-up",
    "checking": "check", "timing": "time", "profiling": "profile", "extracting": "extract", "grading": "grade",
}


@dataclass(frozen=True)
class RunKind:
    key: str
    title: str  # what the progress panel says is happening
    stages: tuple[str, ...]
    which: str = ""  # the workload a profile run profiles


GRADE = RunKind("grade", "Grading", ("starting", "importing", "preparing", "warmup", "checking", "timing", "grading"))
_PROFILE_STAGES = ("starting", "importing", "preparing", "warmup", "profiling", "extracting")
PROFILE_BASELINE = RunKind("profile-baseline", "Profiling the baseline", _PROFILE_STAGES, "baseline")
PROFILE_MINE = RunKind("profile-mine", "Profiling your workload", _PROFILE_STAGES, "mine")
RUN_KINDS = {k.key: k for k in (GRADE, PROFILE_BASELINE, PROFILE_MINE)}


def preflight(puzzle: Puzzle, machine: Machine | None) -> TutorError | None:
    """Why this machine cannot run the puzzle at all, before a subprocess is spent on it."""
    ready = readiness(puzzle, machine)
    if ready.ok:
        return None
    return EnvironmentProblem(f"{puzzle.id} cannot run on this machine ({ready.label}).", ready.why)


def execute(kind: RunKind, ws: Workspace, puzzle: Puzzle, on_event: Callable[[dict], None],
            register: Callable) -> object:
    """Run to the end (blocking: call it from a worker thread); returns a Verdict or a ProfileOutcome.

    Raises TutorError for every failure, including bugs, so the app never shows a traceback.
    """
    from tutor import actions  # the grading stack loads only when a run starts

    on_event({"type": "stage", "stage": "starting", "detail": "starting the workload process"})
    try:
        if kind is GRADE:
            return actions.grade(ws, puzzle, on_event, register)
        return actions.profile(ws, puzzle, kind.which, on_event, register)
    except TutorError:
        raise
    except ValueError as e:  # an unreadable trace names itself in the message
        raise TutorError(str(e), "Run it again; if it keeps failing, the output tail says more.",
                         traceback.format_exc()) from e
    except Exception as e:
        raise TutorError(f"infprof-tutor hit an unexpected {type(e).__name__}: {e}",
                         "This is a bug in infprof-tutor; please report it with the output tail.",
                         traceback.format_exc()) from e
