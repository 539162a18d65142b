"""A watch session's ruler keeper (tutor.harness.keeper): quick checks against one ruler, prepared once.

The small puzzle0 on the CPU, through the keeper's own socket: the second check finds the comparators
prepared, its candidate is a fresh process that loads the file as it is now, and nothing a check's learner
code does reaches the next check. A cancelled check ends the keeper, and the next check runs as any check.
"""

from __future__ import annotations

import os
import re
import shutil
import textwrap
import threading

import pytest

from conftest import started_keeper
from tutor.quick_check import quick_check, watch_keeper
from tutor.runner import RunFailed
from tutor.warm import RulerKeeper

SOLVE = (__import__("pathlib").Path(__file__).parent.parent / "challenges" / "puzzle0" / "solution" / "workload.py")


@pytest.fixture
def keeper(workspace, small_puzzle0, monkeypatch):
    keeper = started_keeper(workspace, small_puzzle0.id, monkeypatch)
    yield keeper
    keeper.stop()
    shutil.rmtree(keeper.socket_path.parent, ignore_errors=True)


def stages(events: list) -> list[str]:
    return [f"{e['stage']} {e.get('detail', '')}".strip() for e in events if e["type"] == "stage"]


def write_mine(workspace, puzzle, source: str) -> None:
    workspace.editable_path(puzzle, "workload.py").write_text(textwrap.dedent(source))


def test_the_second_check_finds_the_comparators_prepared_and_loads_the_file_as_it_is_now(workspace, small_puzzle0,
                                                                                          keeper):
    write_mine(workspace, small_puzzle0, """
        import torch
        def prepare(weights, device):
            return weights
        def forward(state, x):
            return torch.zeros_like(x)  # wrong
        """)
    first_events, second_events = [], []
    first = quick_check(workspace, small_puzzle0, first_events.append, keeper=keeper)
    assert first.kept_ruler and not first.correctness.passed
    ruler = keeper.ask("status")["ruler"]
    assert ruler and any("the puzzle's workloads: a process" in s for s in stages(first_events))

    shutil.copy(SOLVE, workspace.editable_path(small_puzzle0, "workload.py"))  # the learner's fix, saved
    second = quick_check(workspace, small_puzzle0, second_events.append, keeper=keeper)
    assert second.kept_ruler and second.correctness.passed, second.findings()
    # The fix's speed-up, timed against the kept baseline. Not its tier: ten rounds beside three other test processes
    # can leave an interval too wide for any (a fresh clone's suite read none once).
    assert second.speedup.median > 1, second.speedup
    assert keeper.ask("status")["ruler"] == ruler  # the same ruler process
    assert any("kept from the last check" in s for s in stages(second_events))
    assert not any("the puzzle's workloads: a process" in s for s in stages(second_events))


def test_learner_state_of_one_check_never_reaches_the_next(workspace, small_puzzle0, keeper):
    """A check's candidate leaves what it can in its process (a builtin, an attribute of torch, the environment):
    the next check's candidate, forked from the keeper, finds none of it."""
    write_mine(workspace, small_puzzle0, open(SOLVE).read() + textwrap.dedent("""
        import os, torch
        import builtins
        builtins.LEFT_BEHIND = 1
        os.environ["LEFT_BEHIND"] = "1"
        torch.LEFT_BEHIND = 1
        """))
    first = quick_check(workspace, small_puzzle0, keeper=keeper)
    assert first.correct, first.findings()
    write_mine(workspace, small_puzzle0, open(SOLVE).read() + textwrap.dedent("""
        import os, builtins, torch
        left = [hasattr(builtins, "LEFT_BEHIND"), "LEFT_BEHIND" in os.environ, hasattr(torch, "LEFT_BEHIND")]
        assert not any(left), f"a check's state leaked: {left}"
        """))
    second = quick_check(workspace, small_puzzle0, keeper=keeper)
    assert second.kept_ruler and second.correct, second.findings()


def test_the_keeper_runs_one_thread_and_its_checks_torchs_own_count(workspace, small_puzzle0, monkeypatch):
    """Without OMP_NUM_THREADS (as on a learner's machine) the keeper's own comparisons start no thread pool, which
    a forked candidate could not use (its first parallel op waited forever on an H200)."""
    monkeypatch.delenv("OMP_NUM_THREADS", raising=False)
    keeper = started_keeper(workspace, small_puzzle0.id, monkeypatch)
    try:
        write_mine(workspace, small_puzzle0, open(SOLVE).read() + textwrap.dedent("""
            import torch
            x = torch.randn(1 << 20)
            (x * 2).sum()  # a parallel op in the candidate, forked after the keeper's comparisons
            """))
        for _ in range(2):
            checked = quick_check(workspace, small_puzzle0, keeper=keeper)
            assert checked.kept_ruler and checked.correctness.passed, checked.findings()
            assert keeper.ask("status")["threads"] == 1
    finally:
        keeper.stop()


def test_a_check_that_fails_drops_the_ruler_and_the_next_makes_another(workspace, small_puzzle0, keeper):
    write_mine(workspace, small_puzzle0, open(SOLVE).read())
    quick_check(workspace, small_puzzle0, keeper=keeper)
    ruler = keeper.ask("status")["ruler"]
    write_mine(workspace, small_puzzle0, "def prepare(w, d):\n    raise ValueError('broken')\ndef forward(s, x):\n"
                                         "    return x\n")
    with pytest.raises(RunFailed, match="broken"):
        quick_check(workspace, small_puzzle0, keeper=keeper)
    assert keeper.ask("status")["ruler"] is None
    write_mine(workspace, small_puzzle0, open(SOLVE).read())
    again = quick_check(workspace, small_puzzle0, keeper=keeper)
    assert again.correct and keeper.ask("status")["ruler"] not in (None, ruler)


def test_a_cancelled_check_ends_the_keeper_and_the_next_check_runs_as_any_check(workspace, small_puzzle0, keeper):
    write_mine(workspace, small_puzzle0, open(SOLVE).read() + "\nimport time\ntime.sleep(60)\n")
    runs = []
    cancel = threading.Timer(3.0, lambda: [run.cancel() for run in runs])
    cancel.start()
    with pytest.raises(RunFailed, match="cancelled"):
        quick_check(workspace, small_puzzle0, register=runs.append, keeper=keeper)
    cancel.cancel()
    assert keeper.state() == "off"
    write_mine(workspace, small_puzzle0, open(SOLVE).read())
    after = quick_check(workspace, small_puzzle0, keeper=keeper)
    assert after.correct and not after.kept_ruler


@pytest.mark.gpu
def test_a_gpu_puzzles_kept_checks_time_its_reference_against_the_kept_baseline(workspace, monkeypatch):
    """puzzle1's reference in a watch session on the GPU: the first check makes the ruler, the next two keep it,
    each correct and timed against the baseline it kept (its CUDA context, weights and warm-up made once). Without
    OMP_NUM_THREADS: a keeper that had started a thread pool hung its second check's candidate making the weights."""
    import time

    from tutor.catalog import get_puzzle
    from tutor.reference import ready_to_grade

    monkeypatch.delenv("OMP_NUM_THREADS", raising=False)  # torch's own count, as on a learner's machine
    puzzle = get_puzzle("puzzle1")
    ready_to_grade(workspace, puzzle)
    keeper = started_keeper(workspace, puzzle.id, monkeypatch, wait_s=300)
    try:
        checks = []
        for _ in range(3):
            start = time.monotonic()
            checked = quick_check(workspace, puzzle, keeper=keeper)
            checks.append((time.monotonic() - start, checked))
        print("kept checks:", [(f"{s:.2f} s", c.speedup.median, c.tier, c.kept_ruler) for s, c in checks])
        assert all(c.kept_ruler and c.correct and c.tier for _, c in checks), [c.findings() for _, c in checks]
        assert keeper.ask("status")["checks"] == 3 and keeper.ask("status")["threads"] == 1
    finally:
        keeper.stop()


def test_watching_starts_the_keeper_unless_told_not_to(workspace, small_puzzle0, monkeypatch):
    """What the CLI's watch and the app's watch mode ask for each check: the session's keeper, started once."""
    import tempfile

    monkeypatch.setenv("INFPROF_RUNTIME_DIR", tempfile.mkdtemp(prefix="ipk"))
    monkeypatch.setenv("INFPROF_WARM", "1")
    assert watch_keeper(workspace, small_puzzle0) is None  # the suite's INFPROF_KEEP_RULER=0
    monkeypatch.delenv("INFPROF_KEEP_RULER")
    keeper = watch_keeper(workspace, small_puzzle0)
    try:
        assert keeper == RulerKeeper.for_puzzle(workspace.root, small_puzzle0.id)
        assert keeper.wait_ready(owner=os.getpid()) and watch_keeper(workspace, small_puzzle0) == keeper
        assert keeper.ask("status")["owners"] == [os.getpid()]
    finally:
        keeper.stop()
    # None for checks it would not answer: a serving puzzle's (none at all), those of a puzzle on two GPUs.
    from tutor.catalog import get_puzzle

    for other in ("puzzle18", "puzzle13"):
        assert watch_keeper(workspace, get_puzzle(other)) is None
        assert not RulerKeeper.for_puzzle(workspace.root, other).log_path.exists()


def test_a_run_on_the_gpu_has_every_kept_ruler_let_go_of_it_first(workspace, small_puzzle0, keeper, monkeypatch,
                                                                    tmp_path):
    """A kept ruler's process holds the GPU open between a watch session's checks: a grade or a profile beside it
    would list it among the processes it shared the GPU with. Every run on the GPU but a keeper's own asks every
    keeper to end its ruler first; the session's next check makes another."""
    from tutor import runner
    from tutor.warm import release_kept_rulers

    write_mine(workspace, small_puzzle0, open(SOLVE).read())
    quick_check(workspace, small_puzzle0, keeper=keeper)
    ruler = keeper.ask("status")["ruler"]
    assert ruler and release_kept_rulers() == 1
    assert keeper.ask("status")["ruler"] is None and not os.path.exists(f"/proc/{ruler}")
    events = []
    again = quick_check(workspace, small_puzzle0, events.append, keeper=keeper)
    assert again.kept_ruler and again.correct and keeper.ask("status")["ruler"] not in (None, ruler)
    assert any("the puzzle's workloads: a process" in s for s in stages(events))

    class Started(Exception):
        pass

    def started(*args, **kwargs):  # where the run would start its harness: far enough
        raise Started

    asked = []
    monkeypatch.setattr(runner, "release_kept_rulers", lambda: asked.append(True))
    monkeypatch.setattr(runner.RulerKeeper, "spawn", started)
    monkeypatch.setattr(runner.WarmHarness, "spawn", started)
    kept_check = {"device": "cuda", "keeper": str(keeper.socket_path)}
    for request, released in (({"device": "cuda"}, True), (kept_check, False), ({"device": "cpu"}, False)):
        asked.clear()
        with pytest.raises(Started):
            runner.run_harness({"mode": "check", **request}, tmp_path / "run", 60)
        assert bool(asked) == released, request


@pytest.mark.gpu
def test_a_grade_beside_a_watch_session_has_the_gpu_to_itself(workspace, monkeypatch):
    """puzzle1: a watch session's check leaves its ruler's process on the GPU; a grade then has it end before it
    starts, and its verdict names no other process that had the GPU open."""
    import torch

    from tutor import actions
    from tutor.catalog import get_puzzle
    from tutor.reference import ready_to_grade

    puzzle = get_puzzle("puzzle1")
    ready_to_grade(workspace, puzzle)
    keeper = started_keeper(workspace, puzzle.id, monkeypatch, wait_s=300)
    try:
        checked = quick_check(workspace, puzzle, keeper=keeper)
        ruler = keeper.ask("status")["ruler"]
        assert checked.kept_ruler and checked.correct and ruler, checked.findings()
        verdict = actions.grade(workspace, puzzle)
        concerns = verdict.environment.get("concerns", [])
        print("after the grade:", keeper.ask("status"), verdict.tier, concerns)
        assert keeper.ask("status")["ruler"] is None and not os.path.exists(f"/proc/{ruler}")
        # This test process may hold a CUDA context of its own, from a GPU test before it in the session.
        ours = {os.getpid()} if torch.cuda.is_initialized() else set()
        others = [c for c in concerns if "other processes" in c]
        named = {int(pid) for c in others for pid in re.findall(r"pid (\d+)", c)}
        assert verdict.tier and (not others or named and named <= ours), concerns
    finally:
        keeper.stop()
