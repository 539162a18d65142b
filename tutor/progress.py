"""The learner's progress: every attempt, profile and hint, in one SQLite file (sqlite-utils).

The schema is versioned with PRAGMA user_version; each migration runs once, in
a transaction. WAL mode plus a busy timeout lets two graders write at once, and
any number of processes and threads may open a brand-new file at the same moment.
"""

from __future__ import annotations

import json
import sqlite3
import sys
import time
from dataclasses import dataclass
from pathlib import Path

from tutor.metrics import ProfileMetrics


def _import_sqlite_utils():
    """Import sqlite-utils without the pandas and numpy it loads eagerly (~0.45 s).

    It wants them only to map their scalar types to column types; we store plain
    Python values, and `list` must start fast.
    """
    hidden = [m for m in ("pandas", "numpy") if m not in sys.modules]
    for m in hidden:
        sys.modules[m] = None  # makes `import m` raise ImportError, which sqlite-utils tolerates
    try:
        import sqlite_utils
    finally:
        for m in hidden:
            del sys.modules[m]
    return sqlite_utils


sqlite_utils = _import_sqlite_utils()


def _v1(db: sqlite_utils.Database) -> None:
    db["attempts"].create({
        "id": int, "puzzle": str, "created_at": float, "code_hash": str, "passed": int, "tier": str,
        "speedup": float, "speedup_low": float, "verdict_json": str, "run_dir": str,
    }, pk="id")
    db["attempts"].create_index(["puzzle", "created_at"])
    db["profiles"].create({
        "id": int, "puzzle": str, "created_at": float, "workload": str, "code_hash": str,
        "profiler": str, "metrics_json": str, "trace_path": str, "run_dir": str,
    }, pk="id")
    db["profiles"].create_index(["puzzle", "workload", "created_at"])
    db["hints"].create({"puzzle": str, "idx": int, "revealed_at": float}, pk=("puzzle", "idx"))


def _v2(db: sqlite_utils.Database) -> None:
    # The first time a puzzle's review was opened, and what opened it: solved, hints, or early.
    db["reviews"].create({"puzzle": str, "opened_at": float, "unlocked_by": str}, pk="puzzle")


def _v3(db: sqlite_utils.Database) -> None:
    # Study mode: a profile is the learner's own, or the puzzle's recording; diagnoses graded on recordings.
    db["profiles"].add_column("source", str, not_null_default="own")
    db["diagnoses"].create({"id": int, "puzzle": str, "created_at": float, "passed": int, "verdict_json": str},
                           pk="id")


def _v4(db: sqlite_utils.Database) -> None:
    # The puzzle's own reference graded on a card (tutor.calibration): one row per puzzle and card, the newest.
    db["calibrations"].create({"puzzle": str, "card": str, "puzzle_hash": str, "created_at": float, "passed": int,
                               "tier": str, "top_tier": str, "top_bar": float, "speedup": float,
                               "speedup_low": float, "why_not": str}, pk=("puzzle", "card"))


def _v5(db: sqlite_utils.Database) -> None:
    # `infprof-tutor diagnose` on the learner's own workloads: what was run, and the ranked report.
    db["workload_diagnoses"].create({"id": int, "created_at": float, "target": str, "report_json": str,
                                     "run_dir": str}, pk="id")


MIGRATIONS = [_v1, _v2, _v3, _v4, _v5]  # append only: index i brings the schema to version i + 1


@dataclass(frozen=True)
class PuzzleStatus:
    puzzle: str
    status: str  # new / attempted / diagnosed / solved
    tier: str
    best_speedup: float | None
    attempts: int


TIER_ORDER = ["", "bronze", "silver", "gold"]
BUSY_TIMEOUT_S = 15.0


class Progress:
    def __init__(self, path: Path):
        path.parent.mkdir(parents=True, exist_ok=True)
        # The timeout is set as the connection opens, before the first statement touches the file.
        self.db = sqlite_utils.Database(sqlite3.connect(path, timeout=BUSY_TIMEOUT_S))
        self._use_wal()
        self._migrate()

    def _use_wal(self) -> None:
        """Switch the file to WAL, waiting out the other connections that hold it.

        The switch needs an exclusive lock, and SQLite answers SQLITE_BUSY at once, without the busy
        handler, when another connection holds a read lock and wants to write too (waiting could
        deadlock): four connections opening a new db at once failed in 8 of 200 tries (threads),
        4 of 50 (processes).
        """
        deadline, pause_s = time.monotonic() + BUSY_TIMEOUT_S, 0.001
        while True:
            try:
                self.db.execute("PRAGMA journal_mode = wal")
            except sqlite3.OperationalError as e:
                busy = e.sqlite_errorcode in (sqlite3.SQLITE_BUSY, sqlite3.SQLITE_LOCKED)
                if not busy or time.monotonic() > deadline:
                    raise
            else:
                return  # WAL, or a file system without WAL's shared memory: then the rollback journal stays
            time.sleep(pause_s)
            pause_s = min(pause_s * 2, 0.05)

    def _migrate(self) -> None:
        with self.db.conn:
            # One migrator at a time; the version is read inside the lock, so a migration
            # another connection finished while this one waited is not run twice.
            self.db.execute("BEGIN IMMEDIATE")
            version = self.db.execute("PRAGMA user_version").fetchone()[0]
            for i, migration in enumerate(MIGRATIONS[version:], start=version):
                migration(self.db)
                self.db.execute(f"PRAGMA user_version = {i + 1}")

    def record_attempt(self, puzzle: str, code_hash: str, passed: bool, tier: str, speedup: float | None,
                       speedup_low: float | None, verdict: dict, run_dir: Path) -> int:
        with self.db.conn:
            table = self.db["attempts"].insert({
                "puzzle": puzzle, "created_at": time.time(), "code_hash": code_hash, "passed": int(passed),
                "tier": tier, "speedup": speedup, "speedup_low": speedup_low,
                "verdict_json": json.dumps(verdict), "run_dir": str(run_dir),
            })
        return table.last_pk

    def record_profile(self, puzzle: str, workload: str, code_hash: str, metrics: ProfileMetrics,
                       trace_path: Path, run_dir: Path, source: str = "own") -> int:
        """`source`: 'own' (the learner ran it) or 'recorded' (study mode opened the puzzle's recording)."""
        with self.db.conn:
            table = self.db["profiles"].insert({
                "puzzle": puzzle, "created_at": time.time(), "workload": workload, "code_hash": code_hash,
                "profiler": metrics.profiler, "metrics_json": metrics.to_json(), "trace_path": str(trace_path),
                "run_dir": str(run_dir), "source": source,
            })
        return table.last_pk

    def latest_profile(self, puzzle: str, workload: str) -> dict | None:
        rows = list(self.db["profiles"].rows_where("puzzle = ? and workload = ?", [puzzle, workload],
                                                   order_by="created_at desc, id desc", limit=1))
        return rows[0] if rows else None

    def own_profiles(self, puzzle: str, workload: str) -> list[dict]:
        """Every profile the learner ran of `workload`, newest first: a capstone's later stages cite earlier code's."""
        return list(self.db["profiles"].rows_where("puzzle = ? and workload = ? and source = 'own'", [puzzle, workload],
                                                   order_by="created_at desc, id desc"))

    def latest_profiles(self, puzzle: str, workload: str, source: str = "own") -> list[dict]:
        """The newest profile of `workload` from each profiler (torch, ncu, ...): the learner's own, by default."""
        return list(self.db.query(
            "select * from profiles p where puzzle = ? and workload = ? and source = ? and id = ("
            " select id from profiles q where q.puzzle = p.puzzle and q.workload = p.workload"
            " and q.profiler = p.profiler and q.source = p.source order by created_at desc, id desc limit 1)",
            [puzzle, workload, source]))

    def record_diagnosis(self, puzzle: str, passed: bool, verdict: dict) -> None:
        """A diagnosis graded in study mode, against the puzzle's recorded profile."""
        with self.db.conn:
            self.db["diagnoses"].insert({"puzzle": puzzle, "created_at": time.time(), "passed": int(passed),
                                         "verdict_json": json.dumps(verdict)})

    def record_calibration(self, row: dict) -> None:
        """A calibration (tutor.calibration.Calibration's fields): it replaces the puzzle's last one on that card."""
        with self.db.conn:
            self.db["calibrations"].upsert(row, pk=("puzzle", "card"))

    def calibration(self, puzzle: str, card: str) -> dict | None:
        rows = list(self.db["calibrations"].rows_where("puzzle = ? and card = ?", [puzzle, card]))
        return rows[0] if rows else None

    def record_workload_diagnosis(self, target: str, report: dict, run_dir: Path) -> None:
        with self.db.conn:
            self.db["workload_diagnoses"].insert({
                "created_at": time.time(), "target": target, "run_dir": str(run_dir), "report_json": json.dumps(report)})

    def workload_diagnoses(self, limit: int = 20) -> list[dict]:
        """The learner's `diagnose` runs, newest first: each with its target and report."""
        rows = self.db.query("select * from workload_diagnoses order by created_at desc, id desc limit ?", [limit])
        return [dict(row, report=json.loads(row["report_json"])) for row in rows]

    def activity_times(self) -> list[float]:
        """When the learner did anything on record (attempts, profiles, hints, diagnoses), oldest first."""
        rows = self.db.query("select created_at as t from attempts union all select created_at from profiles "
                             "union all select revealed_at from hints union all select created_at from diagnoses "
                             "order by t")
        return [r["t"] for r in rows]

    def diagnosed(self, puzzle: str) -> bool:
        return self.db["diagnoses"].count_where("puzzle = ? and passed = 1", [puzzle]) > 0

    def attempts(self, puzzle: str | None = None) -> list[dict]:
        where, args = ("puzzle = ?", [puzzle]) if puzzle else (None, [])
        return list(self.db["attempts"].rows_where(where, args, order_by="created_at, id"))

    def reveal_hint(self, puzzle: str, available: int) -> int | None:
        """Reveal the next hint; returns its index, or None when all are out."""
        with self.db.conn:
            shown = self.hints_revealed(puzzle)
            if shown >= available:
                return None
            self.db["hints"].insert({"puzzle": puzzle, "idx": shown, "revealed_at": time.time()}, ignore=True)
        return shown

    def hints_revealed(self, puzzle: str) -> int:
        return self.db["hints"].count_where("puzzle = ?", [puzzle])

    def record_review(self, puzzle: str, unlocked_by: str) -> None:
        """The first opening only: a review seen early stays 'early' whatever happens after."""
        self.db["reviews"].insert({"puzzle": puzzle, "opened_at": time.time(), "unlocked_by": unlocked_by},
                                  ignore=True)

    def review_opened(self, puzzle: str) -> str:
        """What opened the puzzle's review first ('solved', 'hints', 'early'), or '' if it never was."""
        rows = list(self.db["reviews"].rows_where("puzzle = ?", [puzzle]))
        return rows[0]["unlocked_by"] if rows else ""

    def status(self, puzzle: str) -> PuzzleStatus:
        rows = self.attempts(puzzle)
        passed = [r for r in rows if r["passed"]]
        best = max((r["speedup"] for r in rows if r["speedup"] is not None), default=None)
        tier = max((r["tier"] or "" for r in passed), key=TIER_ORDER.index, default="")
        # Diagnosed: the bottleneck named from the puzzle's recorded profile (study mode), not yet solved.
        state = "solved" if passed else "diagnosed" if self.diagnosed(puzzle) else "attempted" if rows else "new"
        return PuzzleStatus(puzzle, state, tier, best, len(rows))
