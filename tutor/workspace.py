"""The learner's workspace: editable copies of every puzzle plus .infprof/ (db, run artifacts).

Pristine originals stay in the package; `reset` copies them back.
"""

from __future__ import annotations

import os
import shutil
import tempfile
from dataclasses import dataclass
from pathlib import Path

import platformdirs

from tutor.catalog import Puzzle, all_puzzles
from tutor.errors import TutorError

STATE_DIR = ".infprof"
DEFAULT_NAME = "infprof-workspace"
_REMEMBERED = Path(platformdirs.user_config_dir("infprof-tutor")) / "workspace"


@dataclass(frozen=True)
class Workspace:
    root: Path

    @property
    def state_dir(self) -> Path:
        return self.root / STATE_DIR

    @property
    def db_path(self) -> Path:
        return self.state_dir / "progress.db"

    @property
    def runs_dir(self) -> Path:
        return self.state_dir / "runs"

    def compile_cache(self, side: str) -> Path:
        """torch.compile's and triton's caches of one side of a grade ('ruler' or 'candidate')."""
        return self.state_dir / "compile" / side

    def puzzle_dir(self, puzzle: Puzzle) -> Path:
        return self.root / puzzle.id

    def editable_path(self, puzzle: Puzzle, name: str) -> Path:
        return self.puzzle_dir(puzzle) / name

    def reset(self, puzzle: Puzzle) -> list[Path]:
        """Restore the puzzle's editable files from the package; the old ones are kept as .bak."""
        target = self.puzzle_dir(puzzle)
        target.mkdir(parents=True, exist_ok=True)
        written = []
        for name in puzzle.editable:
            dest = target / name
            if dest.exists():
                shutil.copy2(dest, dest.with_name(dest.name + ".bak"))
            shutil.copy2(puzzle.starter_file(name), dest)
            written.append(dest)
        return written


def init_workspace(root: Path, remember: bool = True) -> Workspace:
    """Create (or top up) a workspace: new puzzles are copied, existing edits are never touched.

    It becomes the one later commands find (unless `remember` is off: a scratch workspace)."""
    ws = Workspace(root.resolve())
    ws.runs_dir.mkdir(parents=True, exist_ok=True)
    for puzzle in all_puzzles().values():
        target = ws.puzzle_dir(puzzle)
        target.mkdir(exist_ok=True)
        for name in puzzle.editable:
            if not (target / name).exists():
                shutil.copy2(puzzle.starter_file(name), target / name)
    if remember:
        _REMEMBERED.parent.mkdir(parents=True, exist_ok=True)
        _REMEMBERED.write_text(str(ws.root))
    return ws


def scratch_workspace(prefix: str) -> Workspace:
    """A workspace in a new temporary folder for the tutor's own runs (dev check, benchmarks): the
    learner's remembered workspace stays theirs."""
    return init_workspace(Path(tempfile.mkdtemp(prefix=prefix)) / "ws", remember=False)


def find_workspace(explicit: Path | None = None) -> Workspace | None:
    """--workspace, then $INFPROF_WORKSPACE, then the nearest parent holding .infprof/, then the last init."""
    if explicit is None and os.environ.get("INFPROF_WORKSPACE"):
        explicit = Path(os.environ["INFPROF_WORKSPACE"])
    if explicit is not None:
        return Workspace(explicit.resolve()) if (explicit / STATE_DIR).is_dir() else None
    here = Path.cwd().resolve()
    for folder in (here, *here.parents):
        if (folder / STATE_DIR).is_dir():
            return Workspace(folder)
    if _REMEMBERED.is_file():
        root = Path(_REMEMBERED.read_text().strip())
        if (root / STATE_DIR).is_dir():
            return Workspace(root)
    return None


def require_workspace(explicit: Path | None = None) -> Workspace:
    ws = find_workspace(explicit)
    if ws is None:
        raise TutorError("No workspace found here.", f"Run `infprof-tutor init` to create ./{DEFAULT_NAME}, then cd into it.")
    return ws
