"""The progress db on a real SQLite file, including two processes writing at once."""

import multiprocessing

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
