"""Issue 13, part 1: nothing learner code does may reach a comparator (tutor.harness.lockstep), run for real on CPU.

The comparator here checks, at every call, that the process state it reads is what it saw at
import; any change makes its output wrong, so the learner's honest output fails the checks.
Before the ruler/candidate split the learner's module was imported into the comparators'
process and every case below failed that way. Each case is one class of global state from
the issue; the GPU-only classes (allocator settings, GemLite tables) are in test_solutions' GPU tests.
"""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from tutor.harness import processes
from tutor.runner import RunFailed, run_harness

pytestmark = pytest.mark.waits  # its tests mostly wait on purpose: spread through the run (conftest)

# Dynamo's config read where Dynamo is loaded: learner code that set it in this process would have loaded it (a
# comparator that imported Dynamo itself cost each of these tests Dynamo's import, 1.5-2.5 s of CPU here).
WATCHFUL_BASELINE = """
import os, sys, torch

def seen():
    dynamo = sys.modules.get("torch._dynamo")
    return (os.environ.get("INFPROF_TEST_KNOB"), dynamo and dynamo.config.recompile_limit,
            torch.backends.cuda.matmul.allow_tf32, torch.get_default_dtype(),
            torch.are_deterministic_algorithms_enabled(), torch.get_num_threads())

AT_IMPORT = seen()

def prepare(weights, device):
    return weights

def forward(state, x):
    changed = seen() != AT_IMPORT
    return x * state["w"] + (1000.0 if changed else 0.0)
"""

HONEST = """
import torch
def prepare(weights, device):
    return weights
def forward(state, x):
    return (x * state["w"]).float()
"""


@pytest.mark.parametrize("change", [
    'import os; os.environ["INFPROF_TEST_KNOB"] = "1"',
    "import torch._dynamo; torch._dynamo.config.recompile_limit = 1",
    "torch.backends.cuda.matmul.allow_tf32 = True",
    "torch.set_default_dtype(torch.float64)",
    "torch.use_deterministic_algorithms(True)",
    "torch.set_num_threads(2)",
], ids=["environment", "dynamo-config", "backends-flag", "default-dtype", "deterministic", "threads"])
def test_global_state_set_by_learner_code_never_reaches_a_comparator(make_request, tmp_path, change):
    request = make_request(baseline=WATCHFUL_BASELINE, mine=HONEST.replace("import torch\n", f"import torch\n{change}\n"))
    result = run_harness(request, tmp_path / "run", 120).result
    print(result["checks"], result["timed_checks"])
    assert all(c["ok_structure"] and c["rel_l2"] == 0.0 for c in result["checks"] + result["timed_checks"])
    assert result["violations"] == []


# The comparator notes each call's start and end; learner code notes the time every 0.2 ms.
TIMED_BASELINE = """
import os, time
def prepare(weights, device):
    return weights
def forward(state, x):
    start = time.monotonic_ns()
    time.sleep(0.004)
    out = x * state["w"]
    with open({windows!r}, "a") as f:
        f.write(f"{{start}} {{time.monotonic_ns()}}\\n")
    return out
"""
TICKER = """
import os, time
fd = os.open({ticks!r}, os.O_WRONLY | os.O_APPEND | os.O_CREAT)
while True:
    os.write(fd, b"%d\\n" % time.monotonic_ns())
    time.sleep(0.0002)
"""
BUSY_ELSEWHERE = """
import os, subprocess, sys, threading, time, torch
TICKER = {ticker!r}

def start():
    how = {how!r}
    if how == "thread":
        threading.Thread(target=exec, args=(TICKER,), daemon=True).start()
    elif how == "new-session":
        subprocess.Popen([sys.executable, "-c", TICKER], start_new_session=True)
    elif os.fork() == 0:  # a daemon: fork, leave the session, fork again; the middle one exits
        os.setsid()
        if os.fork() == 0:
            exec(TICKER)
        os._exit(0)

def prepare(weights, device):
    start()
    while not os.path.exists({ticks!r}) or os.path.getsize({ticks!r}) < 20:
        time.sleep(0.001)  # it is running
    return weights

def forward(state, x):
    return x * state["w"]
"""


@pytest.mark.parametrize("how", ["thread", "new-session", "daemon"])
def test_no_learner_thread_or_process_runs_while_a_comparator_is_timed(make_request, tmp_path, how):
    windows, ticks = tmp_path / "windows.txt", tmp_path / "ticks.txt"
    ticker = TICKER.format(ticks=str(ticks))
    request = make_request(baseline=TIMED_BASELINE.format(windows=str(windows)),
                           mine=BUSY_ELSEWHERE.format(ticker=ticker, how=how, ticks=str(ticks)))
    request["timing"]["rounds"] = 8
    result = run_harness(request, tmp_path / "run", 120).result
    calls = [tuple(map(int, line.split())) for line in windows.read_text().splitlines()]
    noted = sorted(int(t) for t in ticks.read_text().split())
    inside = [t for start, end in calls for t in noted if start < t < end]
    print(how, f"{len(calls)} comparator calls, {len(noted)} ticks, {len(inside)} inside a call")
    # Both sides really ran: the comparator's warm-up, checks and 8 timed calls; prepare() waited for 2 ticks.
    assert len(calls) >= 8 + 2 and len(noted) >= 2
    assert inside == [], f"{len(inside)} ticks of learner code ran inside comparator calls"
    assert all(c["ok_structure"] for c in result["checks"])


def test_nothing_learner_code_started_outlives_the_grade(make_request, tmp_path):
    ticks = tmp_path / "ticks.txt"
    request = make_request(mine=BUSY_ELSEWHERE.format(ticker=TICKER.format(ticks=str(ticks)), how="daemon",
                                                      ticks=str(ticks)))
    run_harness(request, tmp_path / "run", 120)
    size = ticks.stat().st_size
    time.sleep(0.2)
    assert ticks.stat().st_size == size  # the daemon was killed with the grade



def test_a_run_stopped_at_its_time_limit_ends_what_learner_code_started(make_request, tmp_path):
    # The run must reach prepare(), which starts the daemon, before its limit: each limit a fresh run, the next one
    # longer only where the last ended before the daemon ticked (a busy machine), so a quiet one waits 10 s, not 45.
    for limit in (10, 20, 45):
        ticks = tmp_path / f"ticks_{limit}.txt"
        source = BUSY_ELSEWHERE.format(ticker=TICKER.format(ticks=str(ticks)), how="daemon", ticks=str(ticks))
        request = make_request(mine=source.replace("    return x * state[\"w\"]", "    time.sleep(3600)"))
        with pytest.raises(RunFailed) as info:
            run_harness(request, tmp_path / f"run_{limit}", limit)
        assert info.value.kind == "timeout"
        if ticks.exists():
            break
    size = ticks.stat().st_size
    time.sleep(0.3)
    assert ticks.stat().st_size == size  # the daemon, in a session of its own, was ended with the run

# --- On the H100: the two examples the issue measured, and GPU work left queued ---------------------

def grade_puzzle(workspace, puzzle_id: str, source: str):
    from tutor import actions
    from tutor.catalog import get_puzzle
    from tutor.reference import ready_to_grade

    puzzle = get_puzzle(puzzle_id)
    ready_to_grade(workspace, puzzle)  # the reference and its answer, with the baseline profiled
    workspace.editable_path(puzzle, "workload.py").write_text(source)
    return actions.grade(workspace, puzzle)


@pytest.mark.gpu
def test_dynamo_config_set_by_the_learner_leaves_puzzle2s_baseline_compiled(workspace):
    # The example: one line made the baseline fall back to eager (2.72 -> 6.50 ms), "gold at 4.23x".
    from tutor.catalog import get_puzzle

    reference = get_puzzle("puzzle2").solution_dir / "workload.py"
    source = "import torch._dynamo\ntorch._dynamo.config.recompile_limit = 1\n" + reference.read_text()
    verdict = grade_puzzle(workspace, "puzzle2", source)
    print("recompile_limit = 1:", verdict.tier, verdict.speedups, verdict.timings_ms)
    assert verdict.speedups["baseline"]["median"] < 2.5  # honest: 1.6-1.8x on call time


@pytest.mark.gpu
def test_puzzle2s_memory_is_the_timed_codes(workspace):
    # The cheat: graphs per size while timed, eager in a memory run it could tell apart. The
    # comparators are never in the learner's process, and its memory is read there after timing.
    from tutor.catalog import get_puzzle

    reference = get_puzzle("puzzle2").solution_dir / "workload.py"
    source = reference.read_text() + '''
import sys
_graphs = forward
def forward(model, xs):
    if any(name.startswith("infprof_") and name not in ("infprof_mine", "infprof_spec") for name in sys.modules):
        return _graphs(model, xs)
    with torch.inference_mode():
        return torch.cat([block_stack(x, model.layers) for x in xs])
'''
    verdict = grade_puzzle(workspace, "puzzle2", source)
    memory = next(c for c in verdict.criteria if c.name == "graph memory")
    print("timed one way, measured another:", verdict.tier, verdict.speedups, memory.details)
    assert verdict.tier != "gold" and verdict.speedups["baseline"]["median"] < 1.2


# The honest chain, and a thread of the learner's process that floods the GPU with copies on a side
# stream whenever its own forward() is not running: the comparator would run beside them.
FLOODS_THE_GPU = """
import threading
def prepare(weights, device):
    a = torch.empty(256 * 2**20, dtype=torch.uint8, device=device)
    b = torch.empty_like(a)
    side = torch.cuda.Stream()
    def flood():
        while True:
            if not busy[0]:
                with torch.cuda.stream(side):
                    for _ in range(64):
                        b.copy_(a)
    threading.Thread(target=flood, daemon=True).start()
    return weights["w"]
busy = [False]
def forward(w, x):
    busy[0] = True
    try:
        return chain(w, x)
    finally:
        busy[0] = False
"""


@pytest.mark.gpu
def test_gpu_work_a_learner_thread_queues_never_runs_beside_a_comparator(tmp_path):
    from test_anticheat import CHAIN, run_cuda

    honest = run_cuda(tmp_path / "honest", CHAIN, rounds=15)
    flooded = run_cuda(tmp_path / "flooded", CHAIN + FLOODS_THE_GPU, rounds=15)
    baseline = [sorted(r["samples_ms"]["baseline"])[7] for r in (honest, flooded)]
    print("baseline beside an honest chain, beside a flooding thread:", baseline, flooded["violations"])
    # Not slowed (3x before the split), or the wait for the flood to drain is named.
    stalled = any("kept the GPU busy" in v for v in flooded["violations"])
    assert stalled or baseline[1] < 1.2 * baseline[0]


def in_group(pgid: int) -> set[int]:
    found = set()
    for stat in Path("/proc").glob("[0-9]*/stat"):
        with contextlib.suppress(OSError, IndexError, ValueError):
            if int(stat.read_text().rsplit(")", 1)[1].split()[2]) == pgid:
                found.add(int(stat.parent.name))
    return found


@pytest.mark.skipif(not processes.CHILDREN_LISTED, reason="this kernel does not list a thread's children in /proc")
def test_the_learners_processes_are_found_alike_from_their_root_or_from_every_process(monkeypatch):
    """The fast walk (/proc/PID/task/TID/children) finds what the full scan of /proc finds."""
    tree = subprocess.Popen(["sh", "-c", "sleep 30 & sh -c 'sleep 30 & wait' & wait"], start_new_session=True)
    try:
        deadline = time.monotonic() + 10
        while len(in_group(tree.pid)) < 4 and time.monotonic() < deadline:
            time.sleep(0.05)
        from_root = processes.learner_side(tree.pid, set())
        monkeypatch.setattr(processes, "CHILDREN_LISTED", False)
        assert processes.learner_side(tree.pid, set()) == from_root
        assert in_group(tree.pid) <= from_root and len(in_group(tree.pid)) == 4  # sh, sleep, inner sh, sleep
    finally:
        os.killpg(tree.pid, signal.SIGKILL)
        tree.wait()


def test_freeze_returns_only_once_every_thread_of_the_learner_is_stopped():
    """SIGSTOP arrives when the kernel next schedules each thread: freeze() waits for that, else learner
    code runs on into a comparator's call (seen once in 123 ticks, before freeze waited every time)."""
    busy = subprocess.Popen([sys.executable, "-c", "import threading\ndef spin():\n    while True: pass\n"
                             "[threading.Thread(target=spin, daemon=True).start() for _ in range(3)]\nspin()"])
    try:
        deadline = time.monotonic() + 10
        while len(list(Path(f"/proc/{busy.pid}/task").iterdir())) < 4 and time.monotonic() < deadline:
            time.sleep(0.01)
        for _ in range(20):
            processes.freeze(busy.pid, set())
            states = [stat.read_text().rsplit(")", 1)[1].split()[0] for stat in Path(f"/proc/{busy.pid}/task").glob("*/stat")]
            assert len(states) == 4 and set(states) <= {"T", "t"}, states
            processes.thaw(busy.pid, set())
    finally:
        busy.kill()
        busy.wait()



def writes_into(folder: str) -> str:
    """A workload whose prepare() writes a kernel into `folder`, as torch.compile's first compile does."""
    return f"""
import os
from pathlib import Path

def prepare(weights, device):
    target = Path({folder}) / "inductor" / "kernel.py"
    target.parent.mkdir(parents=True, exist_ok=True)
    target.write_text("fast = True")
    return weights

def forward(state, x):
    return x * state["w"]
"""


def profile_alone(make_request, tmp_path, which: str, source: str) -> tuple[dict, Path]:
    request = make_request(mode="profile", **{which: source})
    ruler = tmp_path / "compile" / "ruler"
    request.update(prepare=[which], candidate="mine", profile={"workload": which, "iterations": 1, "trace_path": str(tmp_path / "trace.json")},
                   caches={"ruler": str(ruler), "candidate": str(tmp_path / "compile" / "candidate")},
                   protected={"the comparators' compile cache": [str(ruler)]})
    return request, ruler


def test_the_baseline_profiled_alone_compiles_into_the_comparators_cache(make_request, tmp_path):
    """The puzzle's own baseline alone is the ruler's side, as in a grade (puzzle2's, compiled, was refused on the H100)."""
    request, ruler = profile_alone(make_request, tmp_path, "baseline",
                                   writes_into('os.environ["TORCHINDUCTOR_CACHE_DIR"] + "/.."'))
    run_harness(request, tmp_path / "run", 120)
    assert (ruler / "inductor" / "kernel.py").read_text() == "fast = True"


def test_learner_code_profiled_alone_cannot_write_the_comparators_cache(make_request, tmp_path):
    request, ruler = profile_alone(make_request, tmp_path, "mine", writes_into(repr(str(tmp_path / "compile" / "ruler"))))
    with pytest.raises(RunFailed, match="comparators' compile cache"):
        run_harness(request, tmp_path / "run", 120)
    assert not (ruler / "inductor" / "kernel.py").exists()
