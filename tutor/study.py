"""Study mode: a GPU puzzle's baseline as it was profiled on its GPU, for a learner without that GPU.

The puzzle's recordings/ folder ships the baseline's profile by each profiler the registry records
(tutor.profilers.registry: the PyTorch profiler's metrics and trace, Nsight Compute's CSV, the allocator's
figures) that the puzzle lists. `study` opens one as if the learner had profiled: the same
metrics, the trace for Perfetto, recorded in the progress db as 'recorded', never as the learner's
own. `grade_diagnosis` then grades answer.toml alone against the recordings; a pass makes the puzzle
'diagnosed', not 'solved'. A full grade reads the learner's own profiles only.
"""

from __future__ import annotations

import shutil
from pathlib import Path

from tutor.actions import ProfileOutcome, new_run_dir
from tutor.catalog import Puzzle
from tutor.errors import TutorError
from tutor.grading import stages
from tutor.grading.answer import read_answer, readable_answer
from tutor.grading.diagnosis import check_diagnosis
from tutor.grading.verdict import Criterion, Verdict
from tutor.metrics import ProfileMetrics
from tutor.profilers.registry import PROFILERS, recording_path
from tutor.progress import Progress
from tutor.workspace import Workspace

RECORDED_ON = "an H100 (80 GB HBM3), torch 2.11 with CUDA 13.0"
# A recording made on another card says so in this file of its recordings/ folder (one line, as RECORDED_ON).
RECORDED_ON_FILE = "recorded_on.txt"


def recorded_on(puzzle: Puzzle) -> str:
    """The card and software the puzzle's recordings came from: the H100's unless its folder names another."""
    named = puzzle.recordings_dir / RECORDED_ON_FILE
    return named.read_text().strip() if named.is_file() else RECORDED_ON


def recorded_card(puzzle: Puzzle) -> str:
    """The card alone, as a sentence names it ("an H100 (80 GB HBM3)"): `recorded_on`'s words before its first comma."""
    return recorded_on(puzzle).split(", ")[0]


def recorded_profilers(puzzle: Puzzle) -> list[str]:
    """The profilers whose baseline recording this puzzle ships, in the puzzle's order."""
    return [p for p in puzzle.profilers if p in PROFILERS and PROFILERS[p].recording
            and recording_path(puzzle, p).is_file()]


def read_recording(puzzle: Puzzle, profiler: str) -> tuple[ProfileMetrics, Path]:
    """The recorded metrics and the file a viewer opens (the torch trace, the ncu CSV, ...)."""
    shipped = recorded_profilers(puzzle)
    if profiler not in shipped:
        raise TutorError(f"{puzzle.id} ships no {profiler} recording of its baseline (recorded: "
                         f"{', '.join(shipped) or 'none'}).",
                         f"Study it with --profiler {shipped[0]}." if shipped
                         else "This puzzle has no recordings: it runs on this machine, profile it yourself.")
    recording, path = PROFILERS[profiler].recording, recording_path(puzzle, profiler)
    return recording.read(path), (puzzle.recordings_dir / recording.opened if recording.opened else path)


def study(ws: Workspace, puzzle: Puzzle, profiler: str = "torch") -> ProfileOutcome:
    """Open the baseline's recording as a profile of the learner's: its metrics, a copy of its trace or report."""
    metrics, source = read_recording(puzzle, profiler)
    run_dir = new_run_dir(ws, puzzle, f"study-{profiler}")
    run_dir.mkdir(parents=True)
    artifact = run_dir / source.name
    if source.is_file():
        shutil.copy2(source, artifact)
    metrics.save(run_dir / "metrics.json")
    Progress(ws.db_path).record_profile(puzzle.id, "baseline", "recorded", metrics, artifact, run_dir,
                                        source="recorded")
    return ProfileOutcome(metrics, run_dir, artifact)


def grade_diagnosis(ws: Workspace, puzzle: Puzzle) -> Verdict:
    """answer.toml against the puzzle's recordings (any recorded profiler's value counts); recorded as a diagnosis."""
    values: dict[str, list[float]] = {}
    for profiler in recorded_profilers(puzzle):
        for name, value in read_recording(puzzle, profiler)[0].values.items():
            values.setdefault(name, []).append(value)
    if not values:
        raise TutorError(f"{puzzle.id} ships no recordings to study.", "Profile it yourself: it runs here.")
    try:
        criterion = check_diagnosis(puzzle, read_answer(ws.editable_path(puzzle, "answer.toml")), values,
                                    whose="the recorded")
    except TutorError as e:
        criterion = Criterion("diagnosis", False, e.message, [e.advice])
    criterion.details.append(f"Checked against the baseline recorded on {recorded_on(puzzle)}, not a profile of yours: "
                             "a pass makes the puzzle diagnosed; solving it needs the GPU.")
    verdict = Verdict(puzzle.id, [criterion, *recorded_stages(ws, puzzle)])
    Progress(ws.db_path).record_diagnosis(puzzle.id, criterion.passed, verdict.to_dict())
    return verdict


def recorded_stages(ws: Workspace, puzzle: Puzzle) -> list[Criterion]:
    """A capstone's later stages, each checked against the recording of the profile that shows it (the fix of the
    stages before it, run on the puzzle's machine: recordings/stage<N>_metrics.json) in place of the
    learner's own: every stage named right makes the capstone diagnosed."""
    answer = readable_answer(ws.editable_path(puzzle, "answer.toml"))  # None: the first stage's criterion says why
    found = []
    for number, stage, named, name in stages.later_stages(puzzle, answer):
        recorded = puzzle.recorded_stage(number)
        if not recorded.is_file():
            found.append(Criterion(name, False, "No recording of this stage ships yet.",
                                   [f"recordings/{recorded.name} is made on the puzzle's machine."]))
            continue
        values = ProfileMetrics.from_json(recorded.read_text()).values
        credited, summary, details = stages.check_stage(puzzle, stage, named, [values])
        details.append(f"Checked against {stage.shown_by or 'the fix of the stages before it'} as profiled on "
                       f"{recorded_on(puzzle)}, not a profile of yours.")
        found.append(Criterion(name, credited, summary, details))
    return found
