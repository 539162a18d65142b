"""Put a puzzle's reference solution into a workspace, citing evidence from a real profile.

Used by the tests that prove each puzzle solvable and by the grading benchmarks.
The solution's answer.toml names its metrics; their values must come from the
profile just taken, exactly as a learner's must.
"""

from __future__ import annotations

import json
import shutil
import tomllib

from tutor.catalog import Puzzle
from tutor.grading.answer import read_answer
from tutor.workspace import Workspace


def install_reference(ws: Workspace, puzzle: Puzzle, profile_values: dict[str, float]) -> None:
    for name in puzzle.editable:
        if name != "answer.toml":
            shutil.copy2(puzzle.solution_dir / name, ws.editable_path(puzzle, name))
    answer = read_answer(puzzle.solution_dir / "answer.toml")
    lines = [f'bottleneck = "{answer.bottleneck}"']
    for ev in answer.evidence:
        lines += ["", "[[evidence]]", f'metric = "{ev.metric}"', f"value = {profile_values[ev.metric]!r}"]
    # Other tables (puzzle3's [autotune] report) are the solution's own words: kept as written.
    with (puzzle.solution_dir / "answer.toml").open("rb") as f:
        tables = {k: v for k, v in tomllib.load(f).items() if isinstance(v, dict)}
    for table, entries in tables.items():
        lines += ["", f"[{table}]", *(f"{key} = {json.dumps(value)}" for key, value in entries.items())]
    ws.editable_path(puzzle, "answer.toml").write_text("\n".join(lines) + "\n")
