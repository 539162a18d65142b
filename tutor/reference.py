"""Put a puzzle's reference solution into a workspace, citing evidence from real profiles.

Used by the tests that prove each puzzle solvable and by the grading benchmarks.
The solution's answer.toml names its metrics; their values must come from the
profiles just taken, exactly as a learner's must.
"""

from __future__ import annotations

import json
import shutil
import tomllib
from pathlib import Path

from tutor import actions
from tutor.catalog import Puzzle, Stage
from tutor.grading.answer import read_answer
from tutor.grading.puzzle_checks import grader_module
from tutor.metrics import ProfileMetrics
from tutor.profilers.registry import TIMELINE, profiler_giving
from tutor.progress import Progress
from tutor.workspace import Workspace


def ready_to_grade(ws: Workspace, puzzle: Puzzle, which: str = "reference", reuse_baseline: bool = False) -> None:
    """Profile the baseline (the diagnosis checks against it); with which="reference", install the solution;
    with which="baseline", put the starter files back.

    With reuse_baseline, a profile of the baseline this workspace already has stands for a new one (the baseline
    never changes, nor do a capstone's stage files): a benchmark grading every solution of a puzzle in one
    workspace profiles it once.

    A puzzle whose answer reports what happened in the run (puzzle3: GemLite's choice on this
    machine) learns it as a learner can: from the report of a first grade, of the starter files.
    With which="alternatives/<name>", the reference's answer goes with that alternative's workload.py.
    """
    values = dict(baseline_metrics(ws, puzzle, TIMELINE, reuse_baseline))
    if which == "baseline":  # the starter files, in a workspace an earlier run gave another solution
        ws.reset(puzzle)
        return
    for other in other_profilers_cited(puzzle):  # their evidence comes from their own profile of the baseline
        values.update(baseline_metrics(ws, puzzle, other, reuse_baseline))
    grader = grader_module(puzzle)
    facts = actions.grade(ws, puzzle).facts if hasattr(grader, "answer_from_facts") else {}
    expected = puzzle.alternatives[which.removeprefix("alternatives/")] if which.startswith("alternatives/") else ""
    # A fix expected below the tier [kernel_evidence] starts at (or at no tier) has no better kernel to explain.
    names = [t.name for t in puzzle.tiers]
    needed = names.index(puzzle.kernel_evidence_for) if puzzle.kernel_evidence_for else len(names)
    below = expected != "" and (expected not in names or names.index(expected) < needed)
    without = {"kernel_evidence"} if below else set()
    install_reference(ws, puzzle, values, grader.answer_from_facts(facts) if facts else {},
                      puzzle.solution_path(which), without,
                      [stage_metrics(ws, puzzle, stage, reuse_baseline).values if stage.shown_by else {}
                       for stage in puzzle.stages])


def stage_metrics(ws: Workspace, puzzle: Puzzle, stage: Stage, reuse: bool = False) -> ProfileMetrics:
    """A capstone's later stage: a torch profile of the file that shows it ([[stages]] shown_by), run as the learner's
    workload and kept as the learner's own profile, as a learner who fixed the stages before it would have profiled
    it (tutor.grading.stages reads every such profile). With `reuse`, this workspace's profile of that same code,
    if it has one: the file never changes."""
    shutil.copy2(puzzle.folder / stage.shown_by, ws.editable_path(puzzle, "workload.py"))
    if reuse:
        code = actions.code_hash(ws, puzzle)
        for row in Progress(ws.db_path).own_profiles(puzzle.id, "mine"):
            if row["code_hash"] == code and row["profiler"] == TIMELINE:
                return ProfileMetrics.from_json(row["metrics_json"])
    return actions.profile(ws, puzzle, "mine").metrics


def baseline_metrics(ws: Workspace, puzzle: Puzzle, profiler: str, reuse: bool = False) -> dict[str, float]:
    """The baseline's metrics from `profiler`: with `reuse`, this workspace's newest such profile if it has one,
    else a new profile."""
    if reuse:
        for row in Progress(ws.db_path).latest_profiles(puzzle.id, "baseline"):
            if row["profiler"] == profiler:
                return ProfileMetrics.from_json(row["metrics_json"]).values
    return actions.profile(ws, puzzle, "baseline", profiler=profiler).metrics.values


def other_profilers_cited(puzzle: Puzzle) -> list[str]:
    """The profilers besides the timeline's whose metrics the reference answer cites (puzzle9's ptxas.*)."""
    cited = {profiler_giving(e.metric) for e in read_answer(puzzle.solution_dir / "answer.toml").evidence}
    return sorted(cited - {TIMELINE})


def install_reference(ws: Workspace, puzzle: Puzzle, profile_values: dict[str, float],
                      reported: dict[str, dict] | None = None, workload: Path | None = None,
                      without: set[str] = frozenset(), stage_values: list[dict[str, float]] | None = None) -> None:
    """The solution's files, and its answer.toml with `profile_values` (the baseline's torch profile) cited.

    `reported` replaces tables of the solution's answer with what the run showed. A
    [kernel_evidence] table (a kernel puzzle's) cites Nsight Compute numbers of the baseline and of the
    solution itself: the solution's profile is taken here, once it is in place; the baseline's is the workspace's
    newest (ready_to_grade has just taken it where the answer cites ncu), taken here where it has none. `workload`
    replaces the solution's workload.py (an honest alternative); tables in `without` are left out. A capstone's
    later stages cite `stage_values`, one profile's values a stage (their own numbers where a stage has none).
    """
    for name in puzzle.editable:
        if name != "answer.toml":
            source = workload if name == "workload.py" and workload else puzzle.solution_dir / name
            shutil.copy2(source, ws.editable_path(puzzle, name))
    answer = read_answer(puzzle.solution_dir / "answer.toml")
    lines = [f'bottleneck = "{answer.bottleneck}"']
    for ev in answer.evidence:
        lines += ["", "[[evidence]]", f'metric = "{ev.metric}"', f"value = {profile_values[ev.metric]!r}"]
    for named, values in zip(answer.stages, stage_values or [{} for _ in answer.stages]):
        lines += ["", "[[stages]]", f'bottleneck = "{named.bottleneck}"']
        for ev in named.evidence:
            value = values.get(ev.metric, ev.value)
            lines += ["", "[[stages.evidence]]", f'metric = "{ev.metric}"', f"value = {value!r}"]
    # Other tables (puzzle3's [autotune] report) are the solution's own words, unless the run said otherwise.
    with (puzzle.solution_dir / "answer.toml").open("rb") as f:
        tables = {k: v for k, v in tomllib.load(f).items() if isinstance(v, dict)}
    tables.update(reported or {})
    tables = {k: v for k, v in tables.items() if k not in without}
    if "kernel_evidence" in tables:
        tables["kernel_evidence"] = _kernel_evidence(ws, puzzle, tables["kernel_evidence"]["metric"])
    for table, entries in tables.items():
        lines += ["", f"[{table}]", *(f"{key} = {json.dumps(value)}" for key, value in entries.items())]
    ws.editable_path(puzzle, "answer.toml").write_text("\n".join(lines) + "\n")


def _kernel_evidence(ws: Workspace, puzzle: Puzzle, metric: str) -> dict:
    from tutor.profilers.registry import KERNEL_PROFILER

    return {"metric": metric, "baseline": baseline_metrics(ws, puzzle, KERNEL_PROFILER.id, reuse=True)[metric],
            "mine": actions.profile(ws, puzzle, "mine", profiler=KERNEL_PROFILER.id).metrics.values[metric]}
