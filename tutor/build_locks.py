"""Lock files that a killed build leaves in a workspace's extension caches, found and removed.

torch's C++/CUDA extension loader (load_inline) builds under a `lock` file in the extension's folder and
makes every later loader wait, without limit, until that file is gone. A run stopped while nvcc worked
(its time limit, a cancel, a crash) never removes it, and every later run of the same code would hang
until its own time limit. The runner calls these after such a run, and before each run for a tutor that
was itself killed mid-run.
"""

from __future__ import annotations

import time
from pathlib import Path

# A build lock this old outlived any run that could hold it: runs are stopped long before (their limit).
STALE_AFTER_S = 3600.0


def _locks(caches: dict) -> list[Path]:
    """Every extension build lock under the request's compile caches (one folder a side)."""
    return [lock for folder in caches.values() for lock in Path(folder, "extensions").glob("*/lock")]


def _remove(locks: list[Path]) -> list[Path]:
    removed = []
    for lock in locks:
        try:
            lock.unlink()
            removed.append(lock)
        except FileNotFoundError:
            pass  # its builder finished meanwhile
    return removed


def clear_left_by_run(caches: dict, started: float) -> list[Path]:
    """Remove the locks made since `started` (time.time()): a run whose processes are all dead made them."""
    return _remove([lock for lock in _locks(caches) if _mtime(lock) >= started])


def clear_stale(caches: dict, now: float | None = None) -> list[Path]:
    """Remove locks older than STALE_AFTER_S, which no live run can hold."""
    now = time.time() if now is None else now
    return _remove([lock for lock in _locks(caches) if now - _mtime(lock) > STALE_AFTER_S])


def _mtime(path: Path) -> float:
    try:
        return path.stat().st_mtime
    except FileNotFoundError:
        return float("nan")  # gone meanwhile: compares false either way, and is left alone
