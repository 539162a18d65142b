"""The progress db on a real SQLite file: two processes writing at once, many threads and processes opening a new db."""

import multiprocessing
import threading
import time
import types

from tutor.metrics import ProfileMetrics
from tutor.progress import MIGRATIONS, Progress


def _grade_many(path, worker, n):
    progress = Progress(path)
    for i in range(n):
        progress.record_attempt("puzzle0", f"w{worker}-{i}", i % 2 == 0, "bronze", 2.0, 1.9, {"i": i}, path.parent)


def test_status_moves_from_new_to_attempted_to_solved(tmp_path):
    p = Progress(tmp_path / "p.db")
    assert p.status("puzzle0").status == "new"
    p.record_attempt("puzzle0", "h1", False, "", 1.1, 1.0, {}, tmp_path)
    assert p.status("puzzle0").status == "attempted"
    p.record_attempt("puzzle0", "h2", True, "silver", 20.0, 18.0, {}, tmp_path)
    p.record_attempt("puzzle0", "h3", True, "bronze", 6.0, 5.5, {}, tmp_path)
    s = p.status("puzzle0")
    assert (s.status, s.tier, s.best_speedup, s.attempts) == ("solved", "silver", 20.0, 3)


def test_schema_version_is_set_and_reopen_does_not_migrate_again(tmp_path):
    Progress(tmp_path / "p.db")
    p = Progress(tmp_path / "p.db")
    assert p.db.execute("PRAGMA user_version").fetchone()[0] == len(MIGRATIONS)


def test_latest_profile_is_the_newest(tmp_path):
    p = Progress(tmp_path / "p.db")
    for v in (1.0, 2.0):
        p.record_profile("puzzle0", "baseline", "h", ProfileMetrics({"x": v}), tmp_path / "t.json", tmp_path)
    row = p.latest_profile("puzzle0", "baseline")
    assert ProfileMetrics.from_json(row["metrics_json"]).values == {"x": 2.0}
    assert p.latest_profile("puzzle0", "mine") is None


def test_hints_reveal_in_order_then_run_out(tmp_path):
    p = Progress(tmp_path / "p.db")
    assert [p.reveal_hint("puzzle0", 2) for _ in range(3)] == [0, 1, None]


def test_two_writers_at_once_lose_nothing(tmp_path):
    path = tmp_path / "p.db"
    Progress(path)
    ctx = multiprocessing.get_context("spawn")
    workers = [ctx.Process(target=_grade_many, args=(path, w, 40)) for w in range(2)]
    for w in workers:
        w.start()
    for w in workers:
        w.join(60)
        assert w.exitcode == 0
    p = Progress(path)
    assert len(p.attempts("puzzle0")) == 80
    assert p.db.execute("PRAGMA integrity_check").fetchone()[0] == "ok"


# -- many connections opening a brand-new db at the same moment -----------------------------------------

# Before the WAL switch was retried, on a 2-core machine: 'database is locked' in about 1 try in 25 with
# 4 threads opening one new db at once, 1 in 15 with 2 processes of 2 threads each.
THREADS, PROCESSES, ATTEMPTS_EACH = 4, 2, 3


def _open_together(path, worker, start_at):
    """Spin until the shared start time, then open the (fresh) db and record attempts.

    A spin on the clock, not a barrier's wake-up: the openers start within microseconds of each other.
    """
    while start_at.value == 0 or time.time() < start_at.value:
        pass
    _grade_many(path, worker, ATTEMPTS_EACH)


def _threads_opening_together(path, first_worker, threads, start_at, ready=None):
    """`threads` openers in this process; errors are raised here, after all of them have finished."""
    errors = []

    def opener(worker):
        try:
            _open_together(path, worker, start_at)
        except Exception as e:  # noqa: BLE001 - collected, then raised in this thread
            errors.append(e)

    started = [threading.Thread(target=opener, args=(first_worker + i,)) for i in range(threads)]
    for t in started:
        t.start()
    if ready is not None:
        ready.wait(60)
    for t in started:
        t.join(60)
    if errors:
        raise errors[0]


def _check_every_row_is_there(path, openers):
    p = Progress(path)
    hashes = {r["code_hash"] for r in p.attempts("puzzle0")}
    assert hashes == {f"w{w}-{i}" for w in range(openers) for i in range(ATTEMPTS_EACH)}
    assert p.db.execute("PRAGMA journal_mode").fetchone()[0] == "wal"
    assert p.db.execute("PRAGMA user_version").fetchone()[0] == len(MIGRATIONS)


def test_threads_opening_a_fresh_db_at_once_all_write(tmp_path):
    for trial in range(100):
        path = tmp_path / f"t{trial}" / "p.db"
        start_at = types.SimpleNamespace(value=time.time() + 0.02)  # as a multiprocessing Value reads
        _threads_opening_together(path, 0, THREADS, start_at)
        _check_every_row_is_there(path, THREADS)


class _TrialStart:
    """Trial `trial`'s start time in a shared array, read as _open_together reads a multiprocessing Value."""

    def __init__(self, starts, trial: int):
        self.starts, self.trial = starts, trial

    @property
    def value(self) -> float:
        return self.starts[self.trial]


def _trials_in_one_process(root, first_worker, threads, starts, ready):
    """Every trial in one process started once: importing the tutor is most of a fresh process's time."""
    for trial in range(len(starts)):
        _threads_opening_together(root / f"p{trial}" / "p.db", first_worker, threads, _TrialStart(starts, trial),
                                  ready)


def test_processes_opening_a_fresh_db_at_once_all_write(tmp_path):
    """Each process opens it from two threads too; 15 fresh dbs, one a trial."""
    ctx = multiprocessing.get_context("spawn")
    starts, ready = ctx.Array("d", 15), ctx.Barrier(PROCESSES + 1)
    workers = [ctx.Process(target=_trials_in_one_process, args=(tmp_path, 2 * p, 2, starts, ready))
               for p in range(PROCESSES)]
    for w in workers:
        w.start()
    for trial in range(len(starts)):
        ready.wait(60)  # every child has its threads for this trial started, spinning on its start time
        starts[trial] = time.time() + 0.05
    for w in workers:
        w.join(60)
    assert [w.exitcode for w in workers] == [0] * PROCESSES
    for trial in range(len(starts)):
        _check_every_row_is_there(tmp_path / f"p{trial}" / "p.db", 2 * PROCESSES)
