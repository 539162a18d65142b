"""The learner's workspace: editable copies of every puzzle plus .infprof/ (db, run artifacts).

Pristine originals stay in the package; `reset` copies them back.
"""

from __future__ import annotations

import os
import shutil
import tempfile
from dataclasses import dataclass
from datetime import datetime
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

    @property
    def backups_dir(self) -> Path:
        return self.state_dir / "backups"

    def reset(self, puzzle: Puzzle) -> list[tuple[Path, Path | None]]:
        """Restore the puzzle's editable files from the package. Each file that differs from its starter is first
        copied to a backup folder of this reset's own (.infprof/backups/PUZZLE/TIME/): no reset, however many,
        overwrites what an earlier one kept. Returns each restored file with its backup (None: nothing to keep)."""
        target = self.puzzle_dir(puzzle)
        target.mkdir(parents=True, exist_ok=True)
        backup = self.backups_dir / puzzle.id / datetime.now().strftime("%Y%m%d-%H%M%S-%f")
        written = []
        for name in puzzle.editable:
            dest, starter = target / name, puzzle.starter_file(name)
            kept = None
            if dest.exists() and dest.read_bytes() != starter.read_bytes():
                kept = backup / name
                kept.parent.mkdir(parents=True, exist_ok=True)
                shutil.copy2(dest, kept)
            shutil.copy2(starter, dest)
            written.append((dest, kept))
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
