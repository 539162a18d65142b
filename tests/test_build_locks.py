"""A build lock left by a stopped run is removed, so the next run of the same code does not wait on it forever
(torch's load_inline waits, without limit, while its extension folder holds a `lock` file)."""

from __future__ import annotations

import os
import time

import pytest

from tutor import build_locks
from tutor.runner import RunFailed, run_harness

pytestmark = pytest.mark.waits  # its tests mostly wait on purpose: spread through the run (conftest)


def _lock(caches: dict, side: str, name: str, age_s: float = 0.0):
    lock = caches[side] / "extensions" / name / "lock"
    lock.parent.mkdir(parents=True, exist_ok=True)
    lock.touch()
    when = time.time() - age_s
    os.utime(lock, (when, when))
    return lock


def test_only_locks_older_than_any_run_are_stale(tmp_path):
    caches = {"ruler": tmp_path / "ruler", "candidate": tmp_path / "candidate"}
    old = _lock(caches, "ruler", "scores_v1", age_s=build_locks.STALE_AFTER_S + 60)
    building = _lock(caches, "candidate", "scores_v2", age_s=30)  # a build under way in another run
    assert build_locks.clear_stale(caches) == [old]
    assert not old.exists() and building.exists()


def test_a_stopped_run_loses_the_locks_it_made_and_no_others(tmp_path):
    caches = {"ruler": tmp_path / "ruler", "candidate": tmp_path / "candidate"}
    before = _lock(caches, "ruler", "older", age_s=120)
    started = time.time() - 1.0
    made = [_lock(caches, "ruler", "baseline_ext"), _lock(caches, "candidate", "mine_ext")]
    assert sorted(build_locks.clear_left_by_run(caches, started)) == sorted(made)
    assert before.exists() and not any(lock.exists() for lock in made)


def test_no_caches_no_locks(tmp_path):
    assert build_locks.clear_stale({}) == [] and build_locks.clear_left_by_run({"ruler": tmp_path / "none"}, 0) == []


def test_a_run_stopped_mid_build_leaves_no_lock_for_the_next(make_request, tmp_path):
    """The harness for real: learner code makes its build lock as load_inline does (in the extensions folder
    the worker points TORCH_EXTENSIONS_DIR at), then hangs as nvcc might; the run is stopped at its limit."""
    request = make_request(mine="""
        import os, time
        def prepare(weights, device):
            folder = os.path.join(os.environ["TORCH_EXTENSIONS_DIR"], "mine_ext")
            os.makedirs(folder, exist_ok=True)
            open(os.path.join(folder, "lock"), "w").close()
            print("building", flush=True)
            time.sleep(3600)
        def forward(state, x):
            return x
    """)
    caches = {"ruler": tmp_path / "ruler", "candidate": tmp_path / "candidate"}
    request["caches"] = {side: str(folder) for side, folder in caches.items()}
    with pytest.raises(RunFailed) as info:
        run_harness(request, tmp_path / "run", 10)
    assert info.value.kind == "timeout" and "building" in info.value.output_tail
    assert (caches["candidate"] / "extensions" / "mine_ext").is_dir()
    assert list((tmp_path / "candidate").rglob("lock")) == []
