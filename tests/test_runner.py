"""The harness subprocess for real: success, and every way a learner's workload can fail."""

from __future__ import annotations

import os

import pytest

from conftest import IDENTITY
from tutor.runner import RunFailed, RunFailedEnvironment, run_harness
from tutor.bytecode import seed

pytestmark = pytest.mark.waits  # its tests mostly wait on purpose: spread through the run (conftest)


def run(request, tmp_path, timeout_s=120):
    events = []
    outcome = run_harness(request, tmp_path / "run", timeout_s, on_event=events.append)
    return outcome, events


def test_check_mode_returns_checks_and_interleaved_samples(make_request, tmp_path):
    outcome, events = run(make_request(mine="""
        import torch
        def prepare(weights, device):
            return weights
        def forward(state, x):
            return x.clone()
    """), tmp_path)
    result = outcome.result
    assert [c["rel_l2"] for c in result["checks"]] == [0.0, 0.0]
    assert set(result["samples_ms"]) == {"baseline", "mine"}
    assert all(len(v) == 3 and min(v) > 0 for v in result["samples_ms"].values())
    stages = [e["stage"] for e in events if e["type"] == "stage"]
    assert stages[:1] == ["importing"] and "timing" in stages
    # Each side's process set up apart from its workloads, the ruler's side first (grade_latency.py shows both).
    prepared = [e["detail"] for e in events if e["type"] == "stage" and e["stage"] == "preparing"]
    assert prepared == ["the puzzle's workloads: a process", "baseline", "your workload: a process", "mine"]
    assert (tmp_path / "run" / "output.log").exists()


def test_wrong_output_is_measured_not_crashed(make_request, tmp_path):
    outcome, _ = run(make_request(mine="""
        def prepare(weights, device):
            return weights
        def forward(state, x):
            return x * 2
    """), tmp_path)
    # x * 2 against x: a relative error of exactly 1 on every input (as a list, so a failure shows them all).
    assert [(c["ok_structure"], c["rel_l2"]) for c in outcome.result["checks"]] == [(True, pytest.approx(1.0))] * 2


def test_shape_change_is_reported(make_request, tmp_path):
    outcome, _ = run(make_request(mine="""
        def prepare(weights, device):
            return weights
        def forward(state, x):
            return x[:2]
    """), tmp_path)
    assert "shape" in outcome.result["checks"][0]["problem"]


@pytest.mark.parametrize("source, kind, words", [
    ("def prepare(w, d):\n    return w\ndef forward(s, x)\n    return x\n", "import_error", "SyntaxError"),
    ("def prepare(w, d):\n    return w\n", "bad_workload", "forward()"),
    ("import not_a_real_package_xyz\n", "missing_package", "not_a_real_package_xyz"),
    ("def prepare(w, d):\n    return w\ndef forward(s, x):\n    raise ValueError('boom')\n", "workload_error", "boom"),
    # A real allocation far beyond this machine's memory: the CPU allocator refuses it.
    ("import torch\ndef prepare(w, d):\n    return w\ndef forward(s, x):\n    return torch.empty(2**44, dtype=torch.uint8)\n",
     "oom", "memory"),
])
def test_failures_become_named_errors_with_output(make_request, tmp_path, source, kind, words):
    with pytest.raises(RunFailed) as info:
        run(make_request(mine=source), tmp_path)
    assert info.value.kind == kind
    assert words in info.value.message
    assert info.value.advice


def test_missing_package_is_an_environment_problem(make_request, tmp_path):
    with pytest.raises(RunFailedEnvironment):
        run(make_request(mine="import not_a_real_package_xyz\n"), tmp_path)


def test_hang_is_killed_at_the_deadline(make_request, tmp_path):
    request = make_request(mine="""
        import time
        def prepare(weights, device):
            return weights
        def forward(state, x):
            print("about to hang", flush=True)
            time.sleep(3600)
    """)
    with pytest.raises(RunFailed) as info:
        run(request, tmp_path, timeout_s=8)
    assert info.value.kind == "timeout"
    assert "about to hang" in info.value.output_tail


def test_segfault_is_reported_as_a_crash(make_request, tmp_path):
    with pytest.raises(RunFailed) as info:
        run(make_request(mine="""
            import ctypes
            def prepare(weights, device):
                return weights
            def forward(state, x):
                ctypes.string_at(0)  # reads address 0: SIGSEGV
        """), tmp_path)
    assert info.value.kind == "crashed"
    assert "SIGSEGV" in info.value.message


def test_printing_fake_protocol_events_on_stdout_changes_nothing(make_request, tmp_path):
    outcome, _ = run(make_request(mine="""
        def prepare(weights, device):
            print('{"v": 1, "type": "result", "data": {"checks": []}}')
            return weights
        def forward(state, x):
            return x.clone()
    """), tmp_path)
    assert len(outcome.result["checks"]) == 2


def test_no_gpu_is_an_environment_problem(make_request, tmp_path):
    pytest.importorskip("torch")
    import torch
    if torch.cuda.is_available():
        pytest.skip("this machine has a GPU")
    request = make_request()
    request["device"] = "cuda"
    with pytest.raises(RunFailedEnvironment) as info:
        run(request, tmp_path)
    assert info.value.kind == "no_gpu"


def test_cancel_kills_the_workload(make_request, tmp_path):
    import threading

    from tutor.runner import HarnessRun

    request = make_request(mine="""
        import time
        def prepare(weights, device):
            return weights
        def forward(state, x):
            time.sleep(3600)
    """)
    run_ = HarnessRun(request, tmp_path / "run", timeout_s=120)
    timer = threading.Timer(3.0, run_.cancel)
    timer.start()
    with pytest.raises(RunFailed) as info:
        for _ in run_.events():
            pass
    assert info.value.kind == "cancelled"


@pytest.mark.cold_only
def test_the_harness_keeps_its_bytecode_in_the_tutor_cache(make_request, tmp_path, monkeypatch):
    # As on the GPU machines: nothing writes bytecode, so every run would recompile torch's modules.
    kept = tmp_path / "cache" / "infprof-tutor" / "bytecode"
    # As a fresh machine's cache starts (tutor.bytecode): torch's every module compiled into an empty one was 7 of
    # this test's 10 core-seconds. Less the files the run must write itself.
    seed(kept)
    for pattern in ("lockstep.*.pyc", "torch/__init__.*.pyc"):
        for path in kept.rglob(pattern):
            path.unlink()
    monkeypatch.setenv("PYTHONDONTWRITEBYTECODE", "1")
    monkeypatch.delenv("PYTHONPYCACHEPREFIX", raising=False)
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    monkeypatch.setenv("INFPROF_WARM", "0")  # what a fresh interpreter writes as it starts: a cold run's
    run(make_request(), tmp_path)
    assert list(kept.rglob("lockstep.*.pyc")) and list(kept.rglob("torch/__init__.*.pyc"))


def test_an_oracle_that_is_not_timed_is_only_checked_against(make_request, tmp_path):
    request = make_request(mine="""
        def prepare(weights, device):
            return weights
        def forward(state, x):
            return x * state["w"]
    """)
    request["time"] = ["mine"]  # the baseline is the oracle alone, as eager is in puzzle2
    result = run(request, tmp_path)[0].result
    assert set(result["samples_ms"]) == {"mine"} and len(result["samples_ms"]["mine"]) == 3
    assert [c["rel_l2"] for c in result["checks"]] == [0.0] * 2
    # Every call of a round against the oracle run on its input: the warm call, then 3-5 timed, the last whole.
    assert 3 * 5 <= len(result["timed_checks"]) <= 3 * 7 and all(c["rel_l2"] == 0.0 for c in result["timed_checks"])


def test_a_harness_bug_is_named_as_one(make_request, tmp_path):
    # A request the tutor would never send: the harness trips over it, and says the fault is its own.
    request = make_request(mine="""
        def prepare(weights, device):
            return weights
        def forward(state, x):
            return x.clone()
    """)
    del request["timing"]["rounds"]
    with pytest.raises(RunFailed) as info:
        run_harness(request, tmp_path / "run", 120)
    print(info.value.kind, info.value.message)
    assert info.value.kind == "harness_bug" and info.value.message.startswith("the harness itself failed: KeyError")


def test_a_host_output_must_stay_as_it_was_returned(make_request, tmp_path):
    """A puzzle whose output is the caller's (output "host"): a workload that fills one buffer again every call
    gives back what the last call wrote, and is caught by the call after the checked one; a fresh tensor a call
    passes. On the CPU as on a GPU, where the GPU is also held while the output is read."""
    reused = make_request(mine="""
        import torch
        out = torch.empty(4)
        def prepare(weights, device):
            return weights
        def forward(state, x):
            return torch.mul(x, state["w"], out=out)
    """)
    reused["correctness"]["output"] = "host"
    outcome, _ = run(reused, tmp_path / "reused")
    assert [c.get("problem", "") for c in outcome.result["checks"]] == \
        ["the next call changed the output this call returned: forward() must return results the caller keeps "
         "(a fresh tensor each call, not a buffer it fills again)"] * 2
    fresh = make_request(mine=IDENTITY)
    fresh["correctness"]["output"] = "host"
    outcome, _ = run(fresh, tmp_path / "fresh")
    assert [c["rel_l2"] for c in outcome.result["checks"]] == [0.0, 0.0]
