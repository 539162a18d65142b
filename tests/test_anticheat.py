"""Workloads that would fool a naive grader, graded for real: each must be rejected.

The CPU cheats are graded on puzzle0 as the learner's workload.py. Most of them reached
gold on the grader as it was before issue 5 (a tier is computed even when the diagnosis
fails, as it does here: no profile is taken); now each is rejected with a line a learner
can read, and the tier is withheld. The GPU ones run on a small CUDA spec.
"""

from __future__ import annotations

import json
import re
import shutil
import textwrap
import time

import pytest

from tutor import actions
from tutor.catalog import get_puzzle, load_puzzle
from tutor.harness.gpu_clock import PROBE_CALLS
from tutor.progress import Progress
from tutor.runner import RunFailed, run_harness

# bf16 weights captured into a CUDA graph, then let go of: the graph still reads their old
# addresses, and would give right answers from stale memory while prepare() "keeps" 0 bytes.
GRAPH_ON_FREED_WEIGHTS = '''
import torch

def prepare(weights, device):
    ws = weights["weights"]
    static_x = torch.zeros(1, ws[0].shape[1], dtype=torch.bfloat16, device=device)
    def run():
        h = static_x
        for w in ws:
            h = torch.nn.functional.linear(h, w)
        return h
    side = torch.cuda.Stream()
    side.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(side):
        run()
    torch.cuda.current_stream().wait_stream(side)
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph):
        static_y = run()
    return graph, static_x, static_y

def forward(state, x):
    graph, static_x, static_y = state
    static_x.copy_(x)
    graph.replay()
    return static_y.clone()
'''


@pytest.mark.gpu
def test_graph_reading_freed_weights_is_caught(workspace):
    puzzle = get_puzzle("puzzle1")
    workspace.editable_path(puzzle, "workload.py").write_text(GRAPH_ON_FREED_WEIGHTS)
    verdict = actions.grade(workspace, puzzle)
    correctness = next(c for c in verdict.criteria if c.name == "correctness")
    print("graph on freed weights:", correctness.summary, correctness.details[:1])
    assert not correctness.passed and not verdict.passed and verdict.tier == ""
    assert "NaN" in correctness.details[0]


CUDA_SPEC = '''
import torch
def make_weights(seed, device):
    g = torch.Generator(device=device).manual_seed(seed)
    return {"w": torch.randn(4096, 4096, generator=g, device=device, dtype=torch.bfloat16) / 64}
def make_input(seed, device):
    g = torch.Generator(device=device).manual_seed(seed)
    return torch.randn(4096, 4096, generator=g, device=device, dtype=torch.bfloat16)
'''
CHAIN = '''
import torch
def prepare(weights, device):
    return weights["w"]
def chain(w, x):
    for _ in range(8):
        x = x @ w
    return x
def forward(w, x):
    return chain(w, x)
'''
# The same work queued on a side stream that is never joined back to the timed stream.
SIDE_STREAM = CHAIN + '''
side = None
def forward(w, x):
    global side
    side = side or torch.cuda.Stream()
    side.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(side):
        return chain(w, x)
'''


@pytest.mark.gpu
def test_work_hidden_on_a_side_stream_is_timed(tmp_path):
    result = run_cuda(tmp_path, SIDE_STREAM, rounds=15)
    median = {n: sorted(v)[len(v) // 2] for n, v in result["samples_ms"].items()}
    print("side stream:", median, result["host_timed"])
    assert median["mine"] > 0.8 * median["baseline"]
    assert result["host_timed"] == ["mine"]


# --- CPU: puzzle0, graded for real -------------------------------------------------------------

# The reference solution's arithmetic: each cheat below is fast because of it, or of skipping it.
SOLVE = """
import torch

def solve(state, x):
    mu = x.mean(dim=1, keepdim=True)
    sigma = x.std(dim=1, keepdim=True)
    z = ((x - mu) / (sigma + 1e-5)).clamp(-3.0, 3.0)
    return torch.addcmul(state["shift"], z, state["scale"])

def prepare(weights, device):
    return weights
"""
# The baseline's per-row loop: slow on purpose, for the cheats that fake the clock instead.
SLOW = SOLVE + """
def slow(state, x):
    rows = []
    for row in x:
        z = torch.clamp((row - row.mean()) / (row.std() + 1e-5), -3.0, 3.0)
        rows.append(z * state["scale"] + state["shift"])
    return torch.stack(rows)
"""


@pytest.fixture
def grade_as_mine(small_puzzle0):
    """Grade `source` as the learner's workload.py of puzzle0 (the small one, unless `puzzle` says otherwise)."""
    def grade(workspace, source: str, puzzle=None):
        puzzle = puzzle or small_puzzle0
        workspace.editable_path(puzzle, "workload.py").write_text(textwrap.dedent(source))
        return actions.grade(workspace, puzzle)
    return grade


def rejected(verdict, criterion: str):
    """The named criterion failed, and with it the grade and the tier; returns its text."""
    [c] = [c for c in verdict.criteria if c.name == criterion]
    print(verdict.tier, verdict.timings_ms, c.summary, c.details)
    assert not c.passed and not verdict.passed and verdict.tier == ""
    return " ".join([c.summary, *c.details])


def test_a_cached_output_fails_correctness(workspace, grade_as_mine):
    verdict = grade_as_mine(workspace, SOLVE + """
cache = []
def forward(state, x):
    if not cache:
        cache.append(solve(state, x))  # the first warm-up input's output, returned ever after
    return cache[0]
""")
    assert "too far" in rejected(verdict, "correctness")


def test_outputs_precomputed_from_the_request_seed_are_wrong(workspace, grade_as_mine):
    # The request's seed is readable (sys.argv, torch.initial_seed()): inputs no longer come from it.
    verdict = grade_as_mine(workspace, SOLVE + """
import importlib.util, json, sys
from pathlib import Path

table = {}
def key(x):
    return repr(x[0, :4].tolist())

def prepare(weights, device):
    request = json.loads(Path(sys.argv[-1]).read_text())
    found = importlib.util.spec_from_file_location("spy", request["spec"])
    spec = importlib.util.module_from_spec(found)
    found.loader.exec_module(spec)
    for seed in {request["seed"], torch.initial_seed()}:
        for k in [*range(1000, 1010), *range(2000, 2100)]:  # the old check and round seeds
            x = spec.make_input(seed + k, device)
            table[key(x)] = solve(weights, x)
    return weights

def forward(state, x):
    return table.get(key(x), torch.zeros_like(x))
""")
    assert "too far" in rejected(verdict, "correctness")


CALLS_THE_ORACLE = SOLVE + """
import sys
def forward(state, x):
    return sys.modules["infprof_baseline"].forward(state, x)
"""
# Wraps the oracle so its output is kept, and returns that very tensor when the oracle ran first.
STEALS_THE_ORACLES_OUTPUT = SOLVE + """
import sys
last = {}
def keeping(real):
    def forward(state, x):
        last["x"], last["out"] = x, real(state, x)
        return last["out"]
    return forward

def forward(state, x):
    oracle = sys.modules["infprof_baseline"]
    if "wrapped" not in last:
        oracle.forward = last["wrapped"] = keeping(oracle.forward)
    if "x" in last and torch.equal(last["x"], x):
        return last["out"]
    return solve(state, x)
"""


@pytest.mark.parametrize("source", [CALLS_THE_ORACLE, STEALS_THE_ORACLES_OUTPUT], ids=["calls", "steals"])
def test_the_oracle_is_out_of_reach(workspace, source, grade_as_mine):
    # The oracle and the comparators run in another process: there is nothing to call or wrap.
    with pytest.raises(RunFailed) as info:
        grade_as_mine(workspace, source)
    assert info.value.kind == "workload_error" and "KeyError: 'infprof_baseline'" in info.value.message


def test_skipping_work_when_timed_fails_correctness(workspace, grade_as_mine, small_puzzle0):
    verdict = grade_as_mine(workspace, SOLVE + """
calls = [0]
def forward(state, x):
    calls[0] += 1
    if calls[0] > 6:  # 3 warm-up calls and 3 checks are right; the timed ones return zeros
        return torch.zeros_like(x)
    return solve(state, x)
""")
    text = rejected(verdict, "correctness")
    # Every call of every round, the untimed warm call of each included (4-6), and one drawn after it whole again.
    rounds = small_puzzle0.timing.rounds
    wrong, checked = map(int, re.search(r"in (\d+) of (\d+) timed calls checked", text).groups())
    assert wrong == checked and rounds * 5 <= checked <= rounds * 7 and "input 1: relative L2 error" in text


def test_writing_into_the_input_changes_no_one_elses(workspace, grade_as_mine):
    # Zeroed rows make the oracle's output `shift`: it used to run on the very tensor mine had zeroed.
    verdict = grade_as_mine(workspace, SOLVE + """
def forward(state, x):
    x.zero_()
    return state["shift"].expand(x.shape).clone()
""")
    assert "too far" in rejected(verdict, "correctness")


# forward() returns an empty tensor; a thread started in prepare() fills it after the clock stops.
FILLED_LATER_ON_A_THREAD = SOLVE + """
import atexit, queue, threading
jobs = queue.Queue()
def work(state):
    while (job := jobs.get()) is not None:
        x, out = job
        out.copy_(solve(state, x))

def prepare(weights, device):
    worker = threading.Thread(target=work, args=(weights,), daemon=True)
    worker.start()
    atexit.register(lambda: (jobs.put(None), worker.join()))
    return weights

def forward(state, x):
    out = torch.empty_like(x)
    jobs.put((x, out))
    return out
"""
# Half the rows on a second core during the call: a one-thread puzzle timed as if on two.
# (A thread that reads each round's input from the harness's frames while the baseline runs,
# and computes mine's output before mine is called, is caught the same way; it is not run here
# because reading another thread's running frames can crash CPython 3.11.)
HALF_ON_A_THREAD = SOLVE + """
import threading
def forward(state, x):
    half = x.shape[0] // 2
    out = torch.empty_like(x)
    other = threading.Thread(target=lambda: out[half:].copy_(solve(state, x[half:])))
    other.start()
    out[:half] = solve(state, x[:half])
    other.join()
    return out
"""


# Half the rows in a process of its own, forked in prepare() and fed through shared memory: a second core, as above.
HALF_IN_A_CHILD_PROCESS = SOLVE + """
import os, time
def prepare(weights, device):
    state = dict(weights)
    state["inbox"] = torch.empty(16384 * 64).share_memory_()  # more than an input of the small puzzle0 holds
    state["outbox"] = torch.empty(16384 * 64).share_memory_()
    state["job"] = torch.zeros(4, dtype=torch.int64).share_memory_()  # posted, done, rows, columns
    if os.fork() == 0:
        job = state["job"]
        while True:
            while job[0] == job[1]:
                time.sleep(50e-6)
            n, m = int(job[2]), int(job[3])
            state["outbox"][: n * m].view(n, m).copy_(solve(weights, state["inbox"][: n * m].view(n, m)))
            job[1] = job[0]
    return state

def forward(state, x):
    half = x.shape[0] // 2
    n, m = x[half:].shape
    job = state["job"]
    state["inbox"][: n * m].view(n, m).copy_(x[half:])
    job[2], job[3] = n, m
    job[0] += 1
    out = torch.empty_like(x)
    out[:half] = solve(state, x[:half])
    while job[1] != job[0]:
        time.sleep(50e-6)
    out[half:] = state["outbox"][: n * m].view(n, m)
    return out
"""


@pytest.mark.parametrize("source", [FILLED_LATER_ON_A_THREAD, HALF_ON_A_THREAD, HALF_IN_A_CHILD_PROCESS],
                         ids=["filled-later", "in-parallel", "in-a-child-process"])
def test_work_off_the_timed_thread_is_caught(workspace, source, grade_as_mine):
    assert "ran on other threads" in rejected(grade_as_mine(workspace, source), "fair play")


# Each one leaves its own forward() honest, or slow, and makes the clock lie, or aims at the baseline:
# that one now runs in another process, out of reach, and the attempt is still named.
FAKE_CLOCK = SLOW + """
import time
real = time.perf_counter_ns
hidden = [0]
time.perf_counter_ns = lambda: real() - hidden[0]  # the clock stands still while mine runs
def forward(state, x):
    start = real()
    out = slow(state, x)
    hidden[0] += real() - start
    return out
"""
FAKE_TIMER = SLOW + """
from tutor.harness.device import Device
real = Device.time_call_ms
def time_call_ms(self, fn, name="call"):
    ms, out = real(self, fn, name)
    return (ms / 100 if name == "mine" else ms), out
Device.time_call_ms = time_call_ms
def forward(state, x):
    return slow(state, x)
"""
SLOWER_TORCH = SOLVE + """
real_std = torch.Tensor.std
def std(self, *args, **kwargs):
    if self.dim() == 1:  # only the baseline's per-row calls pay twice
        real_std(self, *args, **kwargs)
    return real_std(self, *args, **kwargs)
torch.Tensor.std = std
def forward(state, x):
    return solve(state, x)
"""
SLOWER_BASELINE_BY_HOOK = SOLVE + """
import sys, time
def hook(frame, event, arg):
    if event == "call" and frame.f_code.co_filename.endswith("baseline.py"):
        time.sleep(0.05)
sys.setprofile(hook)
def forward(state, x):
    return solve(state, x)
"""


@pytest.mark.parametrize("source, words", [
    (FAKE_CLOCK, "the harness or its timer was modified: time.perf_counter_ns"),
    (FAKE_TIMER, "modified: tutor.harness.device.Device.time_call_ms"),
    (SLOWER_TORCH, "torch or Python built-ins were patched, and the harness times you with them: torch.Tensor.std"),
], ids=["perf_counter_ns", "Device.time_call_ms", "torch.Tensor.std"])
def test_tampering_with_the_clock_or_the_baseline_is_caught(workspace, source, words, grade_as_mine):
    assert words in rejected(grade_as_mine(workspace, source), "fair play")


def test_a_profile_function_set_at_import_stops_the_run_before_the_harness_works_under_it(workspace, grade_as_mine):
    # It would run inside the harness's own work (the weights made, each input made): refused before that work
    # runs under it, and said so. (The guard, which read the process's hooks after the calls, once found it later.)
    with pytest.raises(RunFailed) as info:
        grade_as_mine(workspace, SLOWER_BASELINE_BY_HOOK)
    assert info.value.kind == "tampered" and "trace, profile or sys.monitoring" in info.value.message
    assert "(making the weights)" in info.value.message


@pytest.mark.parametrize("returns, words", [
    ("solve(state, x).double()", "output dtype torch.float64 != expected torch.float32"),
    ("solve(state, x)[:, :32]", "output shape (256, 32) != expected (256, 64)"),  # the small puzzle0's rows
    # Empty when returned; its __torch_function__ would compute the output when the grader touched it.
    ("Lazy.make(state, x)", "returned Lazy, a tensor subclass, not a plain torch.Tensor"),
], ids=["dtype", "shape", "subclass"])
def test_the_wrong_kind_of_output_fails_correctness(workspace, returns, words, grade_as_mine):
    verdict = grade_as_mine(workspace, SOLVE + f"""
class Lazy(torch.Tensor):
    @classmethod
    def __torch_function__(cls, func, types, args=(), kwargs=None):
        with torch._C.DisableTorchFunctionSubclass():
            args = [solve(*a.__dict__["job"]) if isinstance(a, Lazy) else a for a in args]
            return func(*args, **(kwargs or {{}}))
    @staticmethod
    def make(state, x):
        out = torch.empty_like(x).as_subclass(Lazy)
        out.__dict__["job"] = (state, x)
        return out

def forward(state, x):
    return {returns}
""")
    assert words in rejected(verdict, "correctness")


READ_SOLUTION = """
from pathlib import Path
import challenges
solution = Path(challenges.__file__).parent / "puzzle0" / "solution" / "workload.py"
"""


def test_reading_the_reference_solution_is_refused(workspace, grade_as_mine):
    # Graded as the small puzzle0, the workload reads the shipped puzzle0's reference in challenges/: every
    # puzzle's reference is out of reach, not only the graded one's.
    with pytest.raises(RunFailed) as info:
        grade_as_mine(workspace, READ_SOLUTION + "exec(solution.read_text())\n")
    print(info.value)
    assert info.value.kind == "import_error"
    assert "PermissionError: infprof-tutor: a workload may not open the reference solution" in info.value.message
    # Caught and ignored, the attempt still fails the grade.
    verdict = grade_as_mine(workspace, READ_SOLUTION + SOLVE + """
try:
    exec(solution.read_text())
except PermissionError:
    def forward(state, x):
        return solve(state, x)
""")
    assert "tried to open the reference solution" in rejected(verdict, "fair play")


def test_writing_into_the_progress_db_is_refused(workspace, grade_as_mine, small_puzzle0):
    # The harness's own writes still work: a profile's trace lands under .infprof/runs/ (the small puzzle0's: a
    # profile of the full one took 15 s of CPU, and its size is not what this tests).
    outcome = actions.profile(workspace, small_puzzle0, "baseline")
    assert outcome.trace_path.is_file() and workspace.runs_dir in outcome.trace_path.parents
    verdict = grade_as_mine(workspace, SOLVE + """
import sqlite3, time
from pathlib import Path

def prepare(weights, device):
    try:  # the harness runs in .infprof/runs/<run>/
        with sqlite3.connect(Path.cwd().parents[1] / "progress.db") as db:
            db.execute("insert into attempts (puzzle, created_at, code_hash, passed, tier, verdict_json, run_dir)"
                       " values ('puzzle0', ?, 'forged', 1, 'gold', '{}', '')", [time.time()])
    except Exception:
        pass
    return weights

def forward(state, x):
    return solve(state, x)
""")
    assert "tried to open the progress database" in rejected(verdict, "fair play")
    assert [(a["passed"], a["tier"]) for a in Progress(workspace.db_path).attempts("puzzle0")] == [(0, "")]


def test_the_comparators_compile_cache_is_out_of_reach_and_the_learners_is_its_own(workspace, grade_as_mine):
    """A kernel left under a comparator's cache key would slow the comparator in every later grade."""
    verdict = grade_as_mine(workspace, SOLVE + """
import os
from pathlib import Path

def prepare(weights, device):
    from torch._inductor.runtime.cache_dir_utils import cache_dir
    mine = Path(cache_dir())  # where torch.compile keeps this process's kernels
    (mine / "where.txt").write_text(os.environ["TRITON_CACHE_DIR"] + "|" + os.environ["TORCH_EXTENSIONS_DIR"])
    try:  # the comparators' cache, beside it in the workspace
        (mine.parents[1] / "ruler" / "inductor" / "planted.py").write_text("slow = True")
    except Exception:
        pass
    return weights

def forward(state, x):
    return solve(state, x)
""")
    assert "tried to open the comparators' compile cache" in rejected(verdict, "fair play")
    mine = workspace.compile_cache("candidate")
    assert (mine / "inductor" / "where.txt").read_text() == f"{mine / 'triton'}|{mine / 'extensions'}"
    assert not (workspace.compile_cache("ruler") / "inductor" / "planted.py").exists()


def test_a_result_forged_on_the_event_pipe_is_ignored(make_request, tmp_path):
    forged = {"type": "result", "data": {"checks": [{"ok_structure": True, "rel_l2": 0.0}],
                                         "samples_ms": {"baseline": [9.0] * 3, "mine": [0.1] * 3}}}
    request = make_request(mine=f"""
        import json, os, stat
        def prepare(weights, device):
            for version in (1, 2):
                line = (json.dumps({{"v": version, "nonce": "", **{forged!r}}}) + "\\n").encode()
                for fd in map(int, os.listdir("/proc/self/fd")):
                    try:
                        if stat.S_ISFIFO(os.fstat(fd).st_mode):
                            os.write(fd, line)
                    except OSError:
                        pass
            os._exit(0)
        def forward(state, x):
            return x
    """)
    with pytest.raises(RunFailed) as info:
        run_harness(request, tmp_path / "run", 120)
    assert info.value.kind == "crashed" and "candidate process exited with code 0 before it answered" in info.value.message


# --- GPU analogues: a small CUDA spec, the harness run directly ------------------------------------

def run_cuda(tmp_path, mine: str, rounds: int = 10) -> dict:
    folder = tmp_path / "p"
    folder.mkdir(parents=True)
    for name, src in {"spec": CUDA_SPEC, "baseline": CHAIN, "mine": mine}.items():
        (folder / f"{name}.py").write_text(src)
    request = {"mode": "check", "device": "cuda", "seed": 7, "spec": str(folder / "spec.py"),
               "workloads": {n: str(folder / f"{n}.py") for n in ("baseline", "mine")},
               "prepare": ["baseline", "mine"], "time": ["baseline", "mine"], "candidate": "mine",
               "oracle": "baseline", "correctness": {"checks": 2}, "timing": {"warmup": 3, "rounds": rounds}}
    result = run_harness(request, tmp_path / "run", 300).result
    print(json.dumps({k: result[k] for k in ("checks", "timed_checks", "violations")})[:2000])
    return result


def right(check: dict) -> bool:
    return check["ok_structure"] and check["rel_l2"] < 1e-2  # bf16: same kernels, so ~0


@pytest.mark.gpu
def test_gpu_skipping_work_when_timed_is_caught(tmp_path):
    honest = 3 + PROBE_CALLS + 2  # warm-up, the calls that size the GPU hold, the checked inputs
    result = run_cuda(tmp_path, CHAIN + f"""
calls = [0]
def forward(w, x):
    calls[0] += 1
    return chain(w, x) if calls[0] <= {honest} else torch.zeros_like(x)
""")
    assert all(map(right, result["checks"]))
    assert not any(map(right, result["timed_checks"]))


@pytest.mark.gpu
def test_gpu_skipping_work_in_calls_close_together_is_caught(tmp_path):
    # Right after a pause, zeros when called again within 10 ms of its last call: the call clock's loop, whose calls
    # come a few ms apart (each input made, and the harness's operators checked, once the call before returned;
    # before issue 76 they came back to back). Every call after the warm-up and the GPU hold's sizing is checked, so
    # every one of them it skipped is caught.
    skipped = tmp_path / "skipped"
    result = run_cuda(tmp_path, CHAIN + f"""
import time
last, calls = [0.0], [0]
def forward(w, x):
    calls[0] += 1
    quick = time.perf_counter() - last[0] < 0.01
    out = torch.zeros_like(x) if quick else chain(w, x)
    if quick and calls[0] > {3 + PROBE_CALLS}:
        open({str(skipped)!r}, "a").write("x")
    last[0] = time.perf_counter()
    return out
""")
    wrong = sum(not right(c) for c in result["checks"] + result["timed_checks"])
    skips = len(skipped.read_text()) if skipped.exists() else 0
    print("zeros when close together:", skips, "calls skipped,", wrong, "outputs wrong")
    assert skips >= 5 and wrong >= skips


@pytest.mark.gpu
def test_gpu_output_finished_after_the_clock_stops_is_caught(tmp_path):
    # A thread queues the work a few ms after forward() returned: after the host clock's device sync.
    result = run_cuda(tmp_path, CHAIN + """
import threading, time
def later(w, x, out):
    time.sleep(0.005)
    out.copy_(chain(w, x))
def forward(w, x):
    out = torch.empty_like(x)
    threading.Thread(target=later, args=(w, x, out)).start()
    return out
""")
    assert not any(map(right, result["checks"]))
    assert sum(map(right, result["timed_checks"])) < len(result["timed_checks"]) / 2


@pytest.mark.gpu
def test_gpu_patched_cuda_events_are_caught(tmp_path):
    result = run_cuda(tmp_path, CHAIN + """
real = torch.cuda.Event.elapsed_time
torch.cuda.Event.elapsed_time = lambda self, end: real(self, end) / 100
""")
    assert any("torch.cuda.Event.elapsed_time" in v for v in result["violations"])


def test_a_workload_that_closes_the_harness_pipe_is_named_not_waited_for(make_request, tmp_path):
    # Closing every inherited descriptor cuts the candidate off the harness while it lives on.
    request = make_request(mine="""
        import os, time
        def prepare(weights, device):
            os.closerange(3, 1024)
            time.sleep(3600)  # alive, and silent
        def forward(state, x):
            return x
    """)
    started = time.monotonic()
    with pytest.raises(RunFailed) as info:
        run_harness(request, tmp_path / "run", 120)
    assert info.value.kind == "crashed" and "stopped answering the harness" in info.value.message
    assert time.monotonic() - started < 60  # told at once, not at the time limit


def test_the_gpus_measured_peaks_are_out_of_reach(workspace, grade_as_mine):
    """A learner who raised the GPU's recorded best rates would lower the physical floor (tutor.grading.floor)."""
    from tutor.machine import PEAKS_DIR

    verdict = grade_as_mine(workspace, SOLVE + f"""
from pathlib import Path

def prepare(weights, device):
    try:  # the open is refused whether or not the folder exists yet
        (Path({str(PEAKS_DIR)!r}) / "NVIDIA_H100_80GB_HBM3.json").write_text('{{"hbm_read_gbps": 1e9}}')
    except Exception:
        pass
    return weights

def forward(state, x):
    return solve(state, x)
""")
    assert "tried to open the GPU's measured peaks" in rejected(verdict, "fair play")
    assert not (PEAKS_DIR / "NVIDIA_H100_80GB_HBM3.json").exists() or "1e9" not in (
        PEAKS_DIR / "NVIDIA_H100_80GB_HBM3.json").read_text()


# Issue 76: the harness makes inputs, flushes caches and reads outputs with aten operators, outside the clock. A
# workload that registers its own kernel for one of them would run inside that work (puzzle25's and puzzle26's
# forward once ran there whole, in the harness's input making); it is stopped before the harness dispatches again.
OVERRIDE = """
import warnings
import torch
{solve}
_lib = torch.library.Library("aten", "IMPL")

def _add(a, b, alpha=1):  # the harness's inputs are randn * 5 + 3: the work could hide in here
    return torch.ops.aten.sub.Tensor(a, b, alpha=-alpha)

def register():
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        _lib.impl("add.Tensor", _add, "CPU")

calls = [0]
if {at_call} == 0 and "{when_prepared}" == "pass":
    register()  # at import, before the harness makes the weights

def prepare(weights, device):
    {when_prepared}
    return weights

def forward(state, x):
    calls[0] += 1
    if calls[0] == {at_call}:
        register()
    return solve(state, x)
"""


@pytest.mark.parametrize("when_prepared, at_call", [("register()", 0), ("pass", 5), ("pass", 0)])
def test_a_kernel_registered_for_an_aten_operator_stops_the_run(workspace, grade_as_mine, when_prepared, at_call):
    with pytest.raises(RunFailed) as info:
        grade_as_mine(workspace, OVERRIDE.format(solve=SOLVE, when_prepared=when_prepared, at_call=at_call))
    assert info.value.kind == "tampered"
    assert "changed what the operators the harness uses to make inputs" in info.value.message
    assert "aten::add.Tensor (CPU: registered at" in info.value.message and "mylib::" in info.value.message


def test_a_kernel_registered_for_what_reads_the_outputs_stops_the_run(workspace, grade_as_mine):
    """The check before a round's outputs are read covers the operators that reading dispatches (a narrower table
    than the whole, tutor.harness.worker.Worker._reading_table): index.Tensor, which reads the drawn places."""
    source = OVERRIDE.format(solve=SOLVE, when_prepared="pass", at_call=5).replace(
        '_lib.impl("add.Tensor", _add, "CPU")', '_lib.impl("index.Tensor", lambda self, indices: self, "CPU")')
    with pytest.raises(RunFailed) as info:
        grade_as_mine(workspace, source)
    assert info.value.kind == "tampered"
    assert "aten::index.Tensor (CPU: registered at" in info.value.message


# Entered at import for every call to come: the harness's inputs would be made under it too. A torch function mode
# sees every torch function the harness calls (the seed's generator, the input) and changes no dispatch key.
FUNCTION_MODE = """
from torch.overrides import TorchFunctionMode

class Sees(TorchFunctionMode):
    def __torch_function__(self, func, types, args=(), kwargs=None):
        return func(*args, **(kwargs or {}))
"""


@pytest.mark.parametrize("mode", ["torch.inference_mode()", "Sees()", "torch.device('cpu')"],
                         ids=["inference_mode", "function_mode", "set_default_device"])
def test_a_mode_entered_for_good_stops_the_run(workspace, grade_as_mine, mode):
    with pytest.raises(RunFailed) as info:
        grade_as_mine(workspace, SOLVE + "\nimport torch\n" + FUNCTION_MODE + f"""
_mode = {mode}
_mode.__enter__()

def forward(state, x):
    return solve(state, x)
""")
    assert info.value.kind == "tampered" and "TorchFunctionMode entered and not left" in info.value.message
    if "device" in mode:  # what torch.set_default_device() does, named for what it is
        assert "torch.set_default_device() enters for good (pass device= instead)" in info.value.message


def test_a_mode_in_a_with_block_is_welcome(workspace, grade_as_mine):
    verdict = grade_as_mine(workspace, SOLVE + """
import torch

def forward(state, x):
    with torch.inference_mode():
        return solve(state, x)
""")
    assert [c.name for c in verdict.criteria if not c.passed and c.name in ("correctness", "fair play")] == []


def test_an_operator_of_the_learners_own_namespace_is_welcome(workspace, grade_as_mine):
    verdict = grade_as_mine(workspace, SOLVE + """
import torch

@torch.library.custom_op("learner::scale", mutates_args=())
def scale(x: torch.Tensor, mean: torch.Tensor, std: torch.Tensor) -> torch.Tensor:
    return (x - mean) / std

def prepare(weights, device):
    return weights

def forward(state, x):
    return solve(state, x)
""")
    assert [c.name for c in verdict.criteria if c.name == "fair play" and not c.passed] == []
