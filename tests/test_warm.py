"""The warm harness (tutor.warm, tutor.harness.zygote): a run it forks is a cold run, only sooner.

Every fairness test also runs through one (`pytest --warm`, a pass of `make test`); these are
what only a warm harness has: its socket, its owner, what it leaves open in a run, its death.
"""

from __future__ import annotations

import contextlib
import json
import os
import signal
import socket
import subprocess
import tempfile
import sys
import threading
import time
from collections import Counter
from pathlib import Path

import pytest

from conftest import start_warm_harness
from tutor.runner import HarnessRun, RunFailed, run_harness
from tutor.warm import WarmHarness, fingerprint, harness_environment

pytestmark = pytest.mark.waits  # its tests mostly wait on purpose: spread through the run (conftest)

# What the learner's process holds: its open files by kind, its environment's names, its session.
LOOK_AROUND = """
import json, os, torch
def prepare(weights, device):
    kinds = []
    for fd in os.listdir("/proc/self/fd"):
        try:
            target = os.readlink(f"/proc/self/fd/{fd}")
        except OSError:
            continue  # the listing's own fd, closed by now
        kinds.append(target.split(":")[0] if ":" in target else "file")
    with open(os.environ["LOOK_AROUND_TO"], "w") as f:
        json.dump({"fds": sorted(kinds), "env": sorted(os.environ), "leader": os.getsid(0) == os.getpgid(0)}, f)
    return weights
def forward(state, x):
    return x * state["w"]
"""


def alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    return True


def wait_for(condition, limit_s: float = 10.0) -> bool:
    deadline = time.monotonic() + limit_s
    while time.monotonic() < deadline:
        if condition():
            return True
        time.sleep(0.05)
    return False


@pytest.fixture(scope="module")
def warm_folder():
    """One warm harness for this module's tests (it takes seconds to import torch), owned by pytest."""
    before = os.environ.get("INFPROF_RUNTIME_DIR")
    folder, harness = start_warm_harness("ipt")
    yield folder
    harness.stop()
    if before is None:
        os.environ.pop("INFPROF_RUNTIME_DIR", None)
    else:
        os.environ["INFPROF_RUNTIME_DIR"] = before


@pytest.fixture
def warm(warm_folder, monkeypatch):
    monkeypatch.setenv("INFPROF_RUNTIME_DIR", warm_folder)
    monkeypatch.setenv("INFPROF_WARM", "require")
    return WarmHarness.for_env()


def test_a_warm_run_gives_what_a_cold_run_gives(warm, make_request, tmp_path, monkeypatch):
    request = make_request(mine="""
        def prepare(weights, device):
            return weights
        def forward(state, x):
            return x * state["w"]
    """)
    warm_run = run_harness(request, tmp_path / "warm", 120)
    monkeypatch.setenv("INFPROF_WARM", "0")
    cold_run = run_harness(request, tmp_path / "cold", 120)
    assert warm_run.warm and not cold_run.warm
    assert set(warm_run.result) == set(cold_run.result)
    assert [c["rel_l2"] for c in warm_run.result["checks"]] == [c["rel_l2"] for c in cold_run.result["checks"]] == [0.0, 0.0]
    assert {k: len(v) for k, v in warm_run.result["samples_ms"].items()} == {"baseline": 3, "mine": 3}


def test_learner_code_in_a_warm_run_holds_what_it_holds_in_a_cold_one(warm, make_request, tmp_path, monkeypatch):
    """No socket, pipe or file of the warm harness stays open in the run: only the run's own."""
    request = make_request(mine=LOOK_AROUND)
    seen = {}
    for mode in ("require", "0"):
        monkeypatch.setenv("INFPROF_WARM", mode)
        monkeypatch.setenv("LOOK_AROUND_TO", str(tmp_path / f"{mode}.json"))
        run_harness(request, tmp_path / mode, 120)
        seen[mode] = json.loads((tmp_path / f"{mode}.json").read_text())
    warm_run, cold_run = seen["require"], seen["0"]
    assert Counter(warm_run["fds"]) == Counter(cold_run["fds"]), (warm_run["fds"], cold_run["fds"])
    assert warm_run["env"] == cold_run["env"]
    assert warm_run["leader"] and cold_run["leader"]  # a session of its own: stopped as a whole


def hangs_with_a_child(marker) -> str:
    """A workload that forks a process of its own (its pid written to `marker`, which appears whole), then never
    returns a call."""
    return f"""
        import os, time
        def prepare(weights, device):
            pid = os.fork()
            if pid == 0:
                time.sleep(600)
                os._exit(0)
            with open({str(marker)!r} + ".part", "w") as f:  # whole when it appears: the test reads it at once
                f.write(str(pid))
            os.replace({str(marker)!r} + ".part", {str(marker)!r})
            return weights
        def forward(state, x):
            time.sleep(600)
    """


def test_a_warm_run_that_hangs_is_stopped_with_what_it_started(warm, make_request, tmp_path):
    marker = tmp_path / "grandchild.pid"
    request = make_request(mine=hangs_with_a_child(marker))
    run = HarnessRun(request, tmp_path / "run", timeout_s=8)
    with pytest.raises(RunFailed) as failure:
        list(run.events())
    assert failure.value.kind == "timeout" and run.warm
    assert wait_for(lambda: not alive(run._proc.pid))
    assert wait_for(lambda: not alive(int(marker.read_text())))
    assert warm.state() == "ready"  # the warm harness serves the next run


# A tutor process that starts a run and is then killed outright (its terminal closed), run by the test as a script.
CALLER = """
import json, sys
from pathlib import Path
from tutor.runner import run_harness
run_harness(json.loads(Path(sys.argv[1]).read_text()), Path(sys.argv[2]), 600)
"""


def in_folder(folder) -> list[int]:
    """The processes whose working folder is `folder` (a run's processes work in its run folder)."""
    pids = []
    for cwd in Path("/proc").glob("[0-9]*/cwd"):
        try:
            if os.readlink(cwd) == str(folder):
                pids.append(int(cwd.parent.name))
        except OSError:
            pass  # gone meanwhile, or not ours to read
    return pids


@pytest.mark.parametrize("mode", ["require", "0"])
def test_a_run_whose_caller_is_killed_outright_ends_with_it(warm, make_request, tmp_path, monkeypatch, mode):
    """Warm, the warm harness sees the caller hang up and stops the run; cold, the run is sent SIGTERM as its parent
    dies. Either way nothing of it is left, what learner code started included."""
    monkeypatch.setenv("INFPROF_WARM", mode)
    marker = tmp_path / "grandchild.pid"
    request = make_request(mine=hangs_with_a_child(marker))
    (tmp_path / "request.json").write_text(json.dumps(request))
    run_dir = tmp_path / "run"
    caller = subprocess.Popen([sys.executable, "-c", CALLER, str(tmp_path / "request.json"), str(run_dir)])
    try:
        assert wait_for(lambda: marker.exists() and in_folder(run_dir.resolve()), limit_s=120)
    finally:
        caller.kill()
        caller.wait()
    assert wait_for(lambda: not in_folder(run_dir.resolve()), limit_s=30), in_folder(run_dir.resolve())
    assert wait_for(lambda: not alive(int(marker.read_text())))


def test_a_run_that_exits_ends_itself_not_the_warm_harness(warm, make_request, tmp_path):
    request = make_request(mode="profile", mine="""
        import sys
        def prepare(weights, device):
            sys.exit(3)
        def forward(state, x):
            return x
    """)
    request.update(prepare=["mine"], profile={"workload": "mine", "iterations": 1})
    with pytest.raises(RunFailed) as failure:
        run_harness(request, tmp_path / "run", 120)
    assert failure.value.kind == "crashed" and "exited with code 3" in failure.value.message
    assert warm.state() == "ready"


def test_another_environment_or_python_finds_no_warm_harness(warm, make_request, tmp_path, monkeypatch):
    env = harness_environment()
    assert fingerprint(env) != fingerprint({**env, "CUDA_VISIBLE_DEVICES": "1"})
    assert fingerprint(env) != fingerprint({**env, "TORCHINDUCTOR_MAX_AUTOTUNE": "1"})
    assert fingerprint(env) == fingerprint({**env, "TERM": "dumb"})  # read by no import
    monkeypatch.setenv("CUDA_VISIBLE_DEVICES", "7")
    with pytest.raises(RunFailed, match="no warm harness"):
        run_harness(make_request(), tmp_path / "run", 120)


def test_a_compile_in_the_callers_process_leaves_its_warm_harness_found(monkeypatch):
    """Inductor writes its cache folder into os.environ as it first compiles (torch's cache_dir()): a test process
    that compiled went on with every run cold (2 s of torch's import each). The compile caches' folders are read by
    no import, and a run's fork takes its caller's environment whole."""
    from torch._inductor.runtime.cache_dir_utils import cache_dir

    for name in ("TORCHINDUCTOR_CACHE_DIR", "TRITON_CACHE_DIR", "TORCH_EXTENSIONS_DIR"):
        monkeypatch.delenv(name, raising=False)
    before = fingerprint(harness_environment())
    cache_dir()  # what inductor does on its first compile
    assert "TORCHINDUCTOR_CACHE_DIR" in os.environ and fingerprint(harness_environment()) == before
    assert fingerprint({**harness_environment(), "TRITON_CACHE_DIR": "/x", "TORCH_EXTENSIONS_DIR": "/y"}) == before
    assert fingerprint({**harness_environment(), "TORCHINDUCTOR_FX_GRAPH_CACHE": "0"}) != before


def test_the_warm_harness_ends_with_its_owner(monkeypatch):
    folder = tempfile.mkdtemp(prefix="ipo")
    monkeypatch.setenv("INFPROF_RUNTIME_DIR", folder)
    owner = subprocess.Popen(["sleep", "600"])
    harness = WarmHarness.for_env()
    try:
        assert harness.start(owner=owner.pid) == "warming"
        assert harness.wait_ready(), harness.log_path.read_text()
        assert harness.ask("status")["owners"] == [owner.pid]
    finally:
        owner.send_signal(signal.SIGKILL)
        owner.wait()
    assert wait_for(lambda: harness.state() == "off")
    assert not harness.socket_path.exists()


def test_a_warm_harness_that_closes_as_it_is_found_is_started_again(monkeypatch):
    """One whose owners have all exited answers a last status, then closes before it can be owned: start() must
    start another, not report it ready (a benchmark's second step, right after the first exited, found none)."""
    folder = tempfile.mkdtemp(prefix="ipc")
    monkeypatch.setenv("INFPROF_RUNTIME_DIR", folder)
    harness = WarmHarness.for_env()
    listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    listener.bind(str(harness.socket_path))
    listener.listen(4)

    def departing() -> None:  # the status answered; the next caller (asking to own it) hung up on, then gone
        conn = listener.accept()[0]
        conn.recv(4096)
        conn.sendall(json.dumps({"pid": 1, "owners": [], "runs": 0}).encode() + b"\n")
        conn.close()
        listener.accept()[0].close()
        listener.close()
        harness.socket_path.unlink()

    thread = threading.Thread(target=departing)
    thread.start()
    try:
        assert harness.start(owner=os.getpid()) == "warming"
        assert harness.state() == "warming"  # a process of its own for this socket, importing torch
    finally:
        thread.join(timeout=10)
        with contextlib.suppress(FileNotFoundError, ProcessLookupError):
            os.killpg(int(harness.log_path.with_suffix(".pid").read_text()), signal.SIGKILL)


def test_the_warm_harness_preloads_the_libraries_of_cuda_puzzles_where_torch_can_run_them(warm):
    """Dynamo and Inductor, which GPU puzzles' runs import, preloaded where torch is a CUDA or ROCm build; a CPU
    build's runs, a CPU puzzle's, import them only where learner code compiles (tutor.harness.zygote)."""
    import torch

    from tutor.harness.zygote import HARNESS
    # Its answer, however long two busy cores take to give it (a 5 s wait read None once in a full suite).
    answers = []
    assert wait_for(lambda: answers.append(warm.ask("status", timeout_s=30)) or answers[-1] is not None, 120)
    preloaded = answers[-1]["preloaded"]
    assert preloaded[0] == "torch" and preloaded[-len(HARNESS):] == list(HARNESS)
    if torch.version.cuda or torch.version.hip:  # unless a child forked after them could not run CUDA (its log says)
        restarted = "torch alone, again" in warm.log_path.read_text()
        assert ("torch._dynamo" in preloaded) != restarted, (preloaded, warm.log_path.read_text())
    else:
        assert "torch._dynamo" not in preloaded, preloaded


def test_infprof_preload_all_preloads_the_libraries_on_any_build(monkeypatch):
    """For a harness whose runs compile on a CPU build, as the test suite's do."""
    import torch

    from tutor.harness.zygote import LIBRARIES, PRELOAD_ENV, bonus_libraries
    monkeypatch.setenv(PRELOAD_ENV, "all")
    assert bonus_libraries() == LIBRARIES
    monkeypatch.delenv(PRELOAD_ENV)
    assert bonus_libraries() == (LIBRARIES if torch.version.cuda or torch.version.hip else ())


def test_while_the_libraries_load_a_child_answers_whether_there_is_a_gpu(monkeypatch):
    """Inductor and torchao ask whether there is a GPU as they load: the warm harness's answer is what a child forked
    then found, and the harness itself never asks (the driver, asked, would leave no child able to run CUDA)."""
    import torch

    from tutor.harness.zygote import gpu_questions_answered_by_a_child

    truth = torch.cuda.is_available(), torch.cuda.device_count()
    asked_here = []
    for name in ("is_available", "device_count"):
        monkeypatch.setattr(torch.cuda, name, lambda real=getattr(torch.cuda, name), name=name:
                            asked_here.append(name) or real())
    own = torch.cuda.is_available, torch.cuda.device_count
    with gpu_questions_answered_by_a_child():
        seen = torch.cuda.is_available(), torch.cuda.device_count()
    assert seen == truth and asked_here == []
    assert (torch.cuda.is_available, torch.cuda.device_count) == own


@pytest.mark.gpu
def test_a_run_forked_by_the_warm_harness_uses_the_gpu(warm, make_request, tmp_path):
    """The warm harness never touched CUDA: its children create their own context, as a cold run does."""
    request = make_request(mine="""
        import torch
        def prepare(weights, device):
            return {"w": weights["w"].to(device), "device": device}
        def forward(state, x):
            return (x.to(state["device"]) * state["w"]).cpu()
    """)
    request["device"] = "cuda"
    outcome = run_harness(request, tmp_path / "run", 300)
    print(warm.ask("status"), outcome.result["samples_ms"])
    assert outcome.warm and [c["rel_l2"] for c in outcome.result["checks"]] == [0.0, 0.0]


def test_a_warm_run_is_waited_on_from_two_threads_at_once():
    """A cancel polls and waits from its own thread while the run's thread waits (tutor.runner): both
    see the exit code, whichever reads it (once this failed with EBADF, the socket closed under a select)."""
    import socket
    import threading

    from tutor.warm import WarmProcess

    for _ in range(200):
        ours, harness = socket.socketpair()
        run = WarmProcess(os.getpid(), ours)
        seen, errors = [], []

        def waiter(call):
            try:
                seen.append(call())
            except Exception as e:  # any failure is the finding
                errors.append(e)

        threads = [threading.Thread(target=waiter, args=(run.wait,)),
                   threading.Thread(target=waiter, args=(lambda: run.wait(5.0),))]
        for t in threads:
            t.start()
        assert run.poll() is None  # a third reader, as the cancel's first poll
        harness.sendall(json.dumps({"exit": 7}).encode() + b"\n")
        harness.close()  # as the warm harness does once it has said how the run ended
        for t in threads:
            t.join(10)
        assert not errors and seen == [7, 7] and run.poll() == 7
        assert run._conn.fileno() == -1  # closed once both had left
