"""--also-cold (tests/conftest.py): a file's tests run twice in one pass, forked from the warm harness and cold."""

from __future__ import annotations

import os

import pytest


def test_a_cold_twin_runs_cold_and_its_warm_twin_as_the_session_runs(request, tmp_path, small_puzzle0):
    """Run only under `make test` (its --also-cold names this file); each twin's harness run says how it started."""
    start = getattr(request.node, "callspec", None) and request.node.callspec.params.get("harness_start")
    if start is None:
        pytest.skip("not named by --also-cold in this session")
    from tutor.runner import run_harness

    puzzle, baseline = small_puzzle0, str(small_puzzle0.workload_path("baseline"))
    request_ = {"mode": "check", "device": "cpu", "seed": 3, "spec": str(puzzle.folder / "spec.py"),
                "workloads": {"baseline": baseline, "mine": baseline}, "prepare": ["baseline", "mine"],
                "time": ["baseline", "mine"], "candidate": "mine", "oracle": "baseline",
                "correctness": {"checks": 1}, "timing": {"warmup": 1, "rounds": 1}}
    outcome = run_harness(request_, tmp_path / "run", 120)
    if start == "cold":
        assert os.environ["INFPROF_WARM"] == "0" and not outcome.warm
    else:  # forked where the warm harness is ready (a busy machine may not have it ready in time: no assertion)
        assert os.environ["INFPROF_WARM"] == request.config.getoption("warm")


@pytest.mark.cold_only
def test_a_test_that_starts_its_runs_cold_itself_runs_once(request):
    """Its two twins would be the same test twice (tests/test_runner.py's bytecode test: 7 s of CPU each)."""
    if "tests/test_also_cold.py" not in request.config.getoption("also_cold"):
        pytest.skip("not named by --also-cold in this session")
    assert not hasattr(request.node, "callspec")
    assert [i.name for i in request.session.items if i.originalname == request.node.originalname] == [request.node.name]
