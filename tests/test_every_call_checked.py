"""Every call of a timed round counts (tutor.harness.call_checks), run through the harness for real on CPU.

Each workload below skips or fakes the work of the calls it believes unchecked, or returns what the
caller cannot use; before every call was checked, each of them passed (the CUDA loop checked its last
call alone, and compared whole outputs read at once).
"""

from __future__ import annotations

import ast
import textwrap
from pathlib import Path

import pytest
import torch

from tutor.harness.call_checks import REUSED, STILL_WRITTEN, WHOLE_LIMIT, read_whole
from tutor.runner import run_harness

SPEC = """
import torch
def make_weights(seed, device):
    g = torch.Generator().manual_seed(seed)
    return {"w": torch.randn(64, 32, generator=g)}
def make_input(seed, device):
    g = torch.Generator().manual_seed(seed)
    return torch.randn(64, 32, generator=g)
"""
BASELINE = """
import torch
def prepare(weights, device):
    return weights
def forward(state, x):
    return x * state["w"]
"""
# A call that comes this soon after the one before is one of the loop's: on the CPU each loop call's input is made
# after the call before returned (a few ms on a loaded machine), which no input's making reaches.
SOON_S = 0.2
ROUNDS = 12  # with 2-4 calls a round, a cheat that needs three calls in one round gets them (all but (1/3)^12)
# How a workload reads from the harness's frames which calls it believes unchecked: puzzle5's cheat's own reader.
_CHEAT = Path(__file__).parent.parent / "challenges" / "puzzle5" / "cheats" / "reads_which_call_is_checked.py"
FRAMES_READER = next(ast.get_source_segment(_CHEAT.read_text(), node) for node in ast.parse(_CHEAT.read_text()).body
                     if isinstance(node, ast.FunctionDef) and node.name == "unchecked") + "\n"


def checked(make_request, tmp_path, mine: str, spec_source: str = SPEC) -> dict:
    request = make_request(baseline=BASELINE, mine=textwrap.dedent(mine))
    with open(request["spec"], "w") as spec:
        spec.write(spec_source)
    request["timing"]["rounds"] = ROUNDS
    result = run_harness(request, tmp_path / "run", 300).result
    return result


# The tail of each workload below that works out answers ahead of their calls: a call answers from its table where
# it can, and says so in the file SERVED names (each test asserts it stays absent).
FROM_TABLE = """
def key(t):
    return repr(t[0, :4].tolist())
def answered(state, x):
    out = table.pop(key(x), None)
    if out is not None:
        with open(SERVED, "a") as f:
            f.write("served\\n")
    return out if out is not None else x * state["w"]
"""


# A kernel for the operator the input is finished with, registered by register(): it works out the call's answer
# untimed and removes itself before the harness looks again (the workloads below that run it inside the harness).
REGISTERS_A_SERVING_KERNEL = """
def register():
    library = torch.library.Library("aten", "IMPL")
    def mul(x, other):
        library._destroy()  # gone before the harness looks again
        out = torch.ops.aten.mul.Tensor(x, other)
        table[key(out)] = out * weights["w"]
        return out
    library.impl("mul.Tensor", mul, "CPU")
"""


def ahead(served: Path, source: str) -> str:
    """`source` (a workload with a `table`), answering from it through FROM_TABLE, `served` its SERVED."""
    return textwrap.dedent(source) + f"SERVED = {str(served)!r}\n" + FROM_TABLE


def right(check: dict) -> bool:
    return check["ok_structure"] and check["rel_l2"] == 0.0


def wrong_per_round(result: dict) -> tuple[int, int]:
    """How many timed outputs were wrong, of how many."""
    timed = result["timed_checks"]
    print([c.get("problem") or c["rel_l2"] for c in timed if not right(c)][:6])
    return sum(not right(c) for c in timed), len(timed)


def test_an_honest_workload_passes_every_call(make_request, tmp_path):
    result = checked(make_request, tmp_path, BASELINE)
    assert all(map(right, result["checks"])) and wrong_per_round(result)[0] == 0
    # The warm call, 3-5 calls, and one of them drawn after the round whole again: 5-7 checks a round.
    assert 5 * ROUNDS <= len(result["timed_checks"]) <= 7 * ROUNDS


def test_an_output_too_large_to_copy_each_round_is_compared_at_its_samples_alone():
    whole = read_whole(7, torch.arange(6.0))
    assert whole[0][0] == 7 and torch.equal(whole[0][1]["tensor"], torch.arange(6.0))
    assert read_whole(7, torch.zeros(1).expand(WHOLE_LIMIT + 1)) == []  # no memory of its own: expanded
    assert read_whole(7, [1.0])[0][1]["problem"].startswith("forward() returned list")  # still named for what it is


def test_an_output_is_kept_in_the_clock_without_a_single_aten_operator():
    """Kept runs right after learner code, before any check of the dispatcher's table: an aten operator there would
    run whatever the call left registered. Its early read of a host output is raw bytes (raw_copy), the same values
    indexing reads after the clock; a mode a call left entered, which would see even the tensor's methods, stops the run
    (the worker asks after every call)."""
    from torch.overrides import TorchFunctionMode
    from torch.profiler import ProfilerActivity, profile

    from tutor.harness.call_checks import Kept, refuse_modes_left_entered
    from tutor.harness.loading import HarnessFailure

    out = torch.randn(300, 7).to(torch.bfloat16)
    with profile(activities=[ProfilerActivity.CPU]) as prof:
        kept = Kept(out)
    assert [e.name for e in prof.events() if e.name.startswith("aten::")] == [] and kept.early is not None
    places = torch.tensor(kept.early.places)
    assert torch.equal(kept.early.tensor(), out.view(-1)[places])
    assert kept.sample(3)["tensor"].numel() == min(out.numel(), 16384)
    out.view(-1)[places[0]] += 1  # written after it returned: seen as still being written
    assert kept.sample(3) == {"problem": STILL_WRITTEN}
    # A buffer filled with NaN before the copy that fills it is launched: NaN when read, numbers once it landed. A
    # check that let NaN be (NaN equals nothing) let such an output through; its bits changed, and that counts.
    pending = torch.full((300, 7), float("nan"), dtype=torch.bfloat16)
    early = Kept(pending)
    pending.copy_(out)
    assert early.sample(3) == {"problem": STILL_WRITTEN}
    unchanged = torch.full((300, 7), float("nan"))
    assert Kept(unchanged).sample(3)["tensor"].isnan().all()  # NaN that stays NaN: its own check fails it

    class Sees(TorchFunctionMode):
        def __torch_function__(self, func, types, args=(), kwargs=None):
            return func(*args, **(kwargs or {}))

    with Sees(), pytest.raises(HarnessFailure) as info:
        refuse_modes_left_entered()
    assert info.value.kind == "tampered"
    refuse_modes_left_entered()  # none left: nothing to say


def test_calls_back_to_back_that_skip_their_work_are_caught(make_request, tmp_path):
    # Told apart by the gaps of its own host clock: right after a pause, zeros when called again soon.
    result = checked(make_request, tmp_path, f"""
        import time, torch
        last = [0.0]
        def prepare(weights, device):
            return weights
        def forward(state, x):
            quick = time.perf_counter() - last[0] < {SOON_S}
            out = torch.zeros_like(x) if quick else x * state["w"]
            last[0] = time.perf_counter()
            return out
    """)
    wrong, _ = wrong_per_round(result)
    # Every loop call after the first, in rounds of two or three: none only if all 12 rounds drew one call, (1/3)^12.
    assert wrong >= 1


def test_calls_told_unchecked_by_the_callers_frames_are_caught(make_request, tmp_path):
    # Reads the harness's frames: skips the warm call, and every call of a loop but its last.
    result = checked(make_request, tmp_path, "import sys, torch\n" + FRAMES_READER + """
def prepare(weights, device):
    return weights
def forward(state, x):
    return torch.zeros_like(x) if unchecked() else x * state["w"]
""")
    wrong, _ = wrong_per_round(result)
    assert all(map(right, result["checks"])) and wrong >= ROUNDS  # the warm call of every round


def test_no_call_finds_the_inputs_of_the_calls_after_it(make_request, tmp_path):
    # In every call, the warm call's included, it finds every input-shaped tensor alive it has not answered and works
    # out its answer, to serve the calls after it in no time. Each ask of a round is sent once the one before
    # returned, and on the CPU each input of the loop is made once the call before it returned: nothing ahead to
    # find (when the loop's inputs were made before its first call, they were served all but the first).
    served = tmp_path / "served"
    result = checked(make_request, tmp_path, ahead(served, """
        import gc, torch
        table, seen = {}, set()
        def prepare(weights, device):
            return weights
        def forward(state, x):
            seen.add(key(x))
            for o in gc.get_objects():
                if type(o) is torch.Tensor and o.shape == x.shape and key(o) not in seen:
                    table[key(o)] = o * state["w"]
            return answered(state, x)
    """))
    assert wrong_per_round(result)[0] == 0 and not served.exists()


# An input made in two operators, so that an allocation comes between them.
SPEC_IN_TWO = SPEC.replace("return torch.randn(64, 32, generator=g)",
                           "return torch.randn(64, 32, generator=g).mul(1.0)")


def test_no_learner_code_runs_while_the_harness_makes_an_input(make_request, tmp_path):
    # A reference cycle whose __del__ waits for the collector to run it inside the spec's make_input (re-arming
    # itself anywhere else), and a collector set to run at every allocation: there, after the harness checked its
    # operators, it registers a kernel for the operator the input is finished with, which works out the call's
    # answer untimed and removes itself before the next check. The collector does not run while the harness checks
    # its operators and makes an input.
    served = tmp_path / "served"
    result = checked(make_request, tmp_path, ahead(served, textwrap.dedent("""
        import gc, sys, torch
        table, weights = {}, {}
        def making():
            frame = sys._getframe(1)
            while frame is not None:
                if frame.f_code.co_name == "make_input":
                    return True
                frame = frame.f_back
            return False
        class Trap:
            def __init__(self):
                self.me = self  # a cycle: freed by the collector alone
            def __del__(self):
                if not making():
                    Trap()
                    return
                register()
        def prepare(w, device):
            weights.update(w)
            gc.set_threshold(1)
            Trap()
            return w
        def forward(state, x):
            return answered(state, x)
    """) + REGISTERS_A_SERVING_KERNEL), SPEC_IN_TWO)
    assert wrong_per_round(result)[0] == 0 and not served.exists()


# An input made in two operators with a pause between them, long enough for a thread to act in.
SPEC_WITH_A_PAUSE = SPEC.replace("import torch", "import time, torch").replace(
    "return torch.randn(64, 32, generator=g)",
    "x = torch.randn(64, 32, generator=g)\n    time.sleep(0.05)\n    return x.mul(1.0)")


def test_a_kernel_a_thread_registers_while_the_harness_makes_an_input_is_refused(make_request, tmp_path):
    # A thread of the workload watches the harness's frames and, while it makes an input (after it checked its
    # operators), registers a kernel for the operator the input is finished with, which works out the call's answer
    # untimed and removes itself before the next check. No check before the work can see it: the harness watches
    # what runs inside its own work, and code of the workload's there stops the run.
    from tutor.runner import RunFailed

    served = tmp_path / "served"
    with pytest.raises(RunFailed) as info:
        checked(make_request, tmp_path, ahead(served, textwrap.dedent("""
            import sys, threading, time, torch
            table, weights = {}, {}
            def making(main):
                frame = sys._current_frames().get(main)
                while frame is not None:
                    if frame.f_code.co_name == "make_input":
                        return True
                    frame = frame.f_back
                return False
            def watch(main):
                while True:
                    if making(main):
                        register()
                        while making(main):
                            time.sleep(0.001)
                    time.sleep(0.001)
            def prepare(w, device):
                weights.update(w)
                threading.Thread(target=watch, args=(threading.main_thread().ident,), daemon=True).start()
                return w
            def forward(state, x):
                return answered(state, x)
        """) + REGISTERS_A_SERVING_KERNEL), SPEC_WITH_A_PAUSE)
    assert info.value.kind == "tampered" and "ran inside the harness's own work" in str(info.value)
    assert "mul() in" in str(info.value) and not served.exists()


def test_a_profile_function_forward_leaves_set_for_the_next_input_is_refused(make_request, tmp_path):
    # forward() leaves a profile function set as it returns, except where the harness's frames say its round ends
    # (the guard reads the process's hooks then): Python runs it inside the next call's input making, where it sees
    # the input returned and works out its answer before that call's clock starts (110 calls served, before). On a
    # GPU it could as well work out a garbage output's answer once the clock stopped, and write it into the copy
    # the harness keeps. A profile function raises no profile events of its own, so the watch of the harness's work
    # would not see it: one left set as forward() returns stops the run there.
    from tutor.runner import RunFailed

    served = tmp_path / "served"
    with pytest.raises(RunFailed) as info:
        checked(make_request, tmp_path, ahead(served, """
            import sys, torch
            table, weights = {}, {}
            def spy(frame, event, arg):
                if event == "return" and frame.f_code.co_name == "make_input" and isinstance(arg, torch.Tensor):
                    table[key(arg)] = arg * weights["w"]
            def round_ends():
                frame = sys._getframe(2)
                while frame is not None:
                    if frame.f_code.co_name == "gpu_call" or frame.f_locals.get("last") is True:
                        return True
                    frame = frame.f_back
                return False
            def prepare(w, device):
                weights.update(w)
                return w
            def forward(state, x):
                sys.setprofile(None)
                out = answered(state, x)
                if not round_ends():
                    sys.setprofile(spy)
                return out
        """))
    assert info.value.kind == "tampered" and "forward() returned with a trace, profile" in str(info.value)
    assert not served.exists()


def test_a_finalizer_tied_to_an_input_runs_no_code_as_the_harness_lets_the_input_go(make_request, tmp_path):
    # The harness lets a loop's inputs go once its clock stopped: a finalizer the workload tied to each would run
    # there, untimed, before the round is checked (on a GPU, time to work out a garbage output's answer and write it
    # into the copy the harness keeps). That moment is watched as the harness's own work is.
    from tutor.runner import RunFailed

    ran = tmp_path / "ran"
    with pytest.raises(RunFailed) as info:
        checked(make_request, tmp_path, f"""
            import weakref
            def later():
                with open({str(ran)!r}, "a") as f:
                    f.write("ran\\n")
            def prepare(weights, device):
                return weights
            def forward(state, x):
                weakref.finalize(x, later)
                return x * state["w"]
        """)
    assert info.value.kind == "tampered" and "(letting a call's input go)" in str(info.value)
    assert "later() in" in str(info.value)


def test_an_audit_hook_of_the_workload_never_runs_inside_the_harness_reading_its_outputs(make_request, tmp_path):
    # Python calls every audit hook on its events, and ctypes raises one as the harness reads a kept output: a hook
    # added in prepare() would run there, after the harness checked its operators (and could register a kernel
    # that the reading then runs). No hook is added after the harness's own, and adding one is a violation.
    ran = tmp_path / "ran"
    result = checked(make_request, tmp_path, f"""
        import sys
        def inside_the_harness(event, args):
            frame = sys._getframe(1)
            while frame is not None:
                if frame.f_code.co_name == "sampled":
                    with open({str(ran)!r}, "a") as f:
                        f.write(event + "\\n")
                    return
                frame = frame.f_back
        def prepare(weights, device):
            sys.addaudithook(inside_the_harness)
            return weights
        def forward(state, x):
            return x * state["w"]
    """)
    assert not ran.exists()
    assert any("audit hook" in v for v in result["violations"]), result["violations"]


# In every call, the warm call's included, it looks for the round's seeds in the harness's frames and in every list
# the process holds (inputs are a pure function of their seed, and the spec is public), works out the answer of each
# input they make, and serves the round's later calls from that table. Each call's seed is sent in an ask of its own,
# once the call before returned: while a call runs, no later call's seed exists in the process (when the loop's
# seeds came in one ask, its first call served all the others).
SEEDS_FINDER = """
import gc, sys, torch
table = {{}}
def prepare(weights, device):
    return weights
def seeds_in(value):
    if isinstance(value, int) and not isinstance(value, bool) and value > 2**20:
        yield value
    elif isinstance(value, (list, tuple)) and len(value) < 64:
        for v in value:
            if isinstance(v, int) and not isinstance(v, bool) and v > 2**20:
                yield v
def found_seeds():
    frame, found = sys._getframe(2), set()
    while frame is not None:
        for value in list(frame.f_locals.values()):
            found.update(seeds_in(value))
        frame = frame.f_back
    if {through_gc}:
        for o in gc.get_objects():
            if type(o) is list:
                found.update(seeds_in(o))
    return found
def forward(state, x):
    for seed in found_seeds():
        g = torch.Generator().manual_seed(seed)
        made = torch.randn(64, 32, generator=g)
        if key(made) != key(x):  # another call's input
            table[key(made)] = made * state["w"]
    return answered(state, x)
"""


@pytest.mark.parametrize("through_gc", [False, True], ids=["frames", "gc"])
def test_no_call_finds_a_seed_of_the_calls_after_it(make_request, tmp_path, through_gc):
    served = tmp_path / "served"
    result = checked(make_request, tmp_path, ahead(served, SEEDS_FINDER.format(through_gc=through_gc)))
    assert wrong_per_round(result)[0] == 0 and not served.exists()


def test_an_output_returned_as_a_strided_view_is_refused(make_request, tmp_path):
    # The right values, laid out transposed: a caller reading it as the oracle's layout reads it slowly or wrongly.
    result = checked(make_request, tmp_path, """
        def prepare(weights, device):
            return weights
        def forward(state, x):
            return (x * state["w"]).t().contiguous().t()
    """)
    problems = {c.get("problem", "")[:42] for c in result["checks"] + result["timed_checks"]}
    assert problems == {"output is a strided view (strides (1, 64))"}


def test_a_host_buffer_filled_again_two_calls_later_is_caught(make_request, tmp_path):
    # Two buffers used in turn: each output right when read at once, overwritten two calls later.
    result = checked(make_request, tmp_path, """
        import torch
        buffers, calls = [], [0]
        def prepare(weights, device):
            return weights
        def forward(state, x):
            if not buffers:
                buffers.extend([torch.empty_like(x), torch.empty_like(x)])
            out = buffers[calls[0] % 2]
            calls[0] += 1
            return torch.mul(x, state["w"], out=out)
    """)
    assert all(map(right, result["checks"])) and wrong_per_round(result)[0] >= 1
    assert {c["problem"] for c in result["timed_checks"] if not right(c)} == {REUSED}


@pytest.mark.parametrize("returns, words", [("[x]", "not a tensor"), ("x.to(torch.float64)", "dtype")])
def test_a_call_of_the_wrong_kind_is_named(make_request, tmp_path, returns, words):
    # Wrong only in calls soon after another (after a pause it is right): sampled, still named for what it is.
    result = checked(make_request, tmp_path, f"""
        import time, torch
        last = [0.0]
        def prepare(weights, device):
            return weights
        def forward(state, x):
            quick = time.perf_counter() - last[0] < {SOON_S}
            last[0] = time.perf_counter()
            x = x * state["w"]
            return {returns} if quick else x
    """)
    assert any(words in c.get("problem", "") for c in result["timed_checks"])


# --- on CUDA: the call clock's loop, the GPU clock's call after it -----------------------------------------

# Works out, in the warm call and in each call of the loop, the answers of every other input it finds alive, to
# serve them later in no time: the loop's calls, and the GPU clock's. Each input is made only once the call before
# it returned: nothing to find (when the loop's inputs were made before its first call, its later calls were served).
PRECOMPUTES_WHERE_UNTIMED = """
import gc, sys, torch
table = {}
def key(t):
    return repr(t[0, :4].float().tolist())
def phase():
    frame = sys._getframe(2)
    while frame is not None:
        if frame.f_code.co_name == "warm_call":
            return "warm"
        if frame.f_code.co_name == "loop_call":  # the call clock's
            return "loop"
        if frame.f_code.co_name == "time_call_ms":
            return "gpu clock"
        frame = frame.f_back
    return "other"
def forward(w, x):
    now = phase()
    if now in ("warm", "loop"):
        for o in gc.get_objects():
            if type(o) is torch.Tensor and o is not x and o.shape == x.shape and o.is_cuda and key(o) not in table:
                table[key(o)] = (now, chain(w, o))
    found = table.pop(key(x), None)
    if found is not None:
        open(SERVED, "a").write(f"{found[0]} -> {now}\\n")
    return found[1] if found is not None else chain(w, x)
"""


@pytest.mark.gpu
def test_gpu_no_untimed_call_finds_the_inputs_timed_after_it(tmp_path):
    from test_anticheat import CHAIN, run_cuda

    served = tmp_path / "served"
    result = run_cuda(tmp_path, CHAIN + f"SERVED = {str(served)!r}\n" + PRECOMPUTES_WHERE_UNTIMED, rounds=5)
    print("served from work done untimed:", served.read_text() if served.exists() else "nothing")
    assert not served.exists() and all(c["ok_structure"] for c in result["timed_checks"])


# A thread of its own watches for each new input (the harness's list of the loop's inputs, found once in prepare, and
# the GPU clock's call's input in the main thread's frames) and queues its work the moment it is made, to serve the
# call from it. Since the clock starts once the harness's own work is done, not the device's, that work is still
# running when it starts, and counts; the GPU clock counts what the device still ran before its call as work its
# events missed (a device-wide wait there ran it free, and each clock read it far faster than the same work).
WATCHES_FOR_INPUTS = """
import sys, threading, time, torch
table = {}
def fresh_inputs(worker, main):
    if worker._loop_made:
        yield worker._loop_made[-1]
    frame = sys._current_frames().get(main)
    while frame is not None:
        if frame.f_code.co_name == "gpu_call" and isinstance(frame.f_locals.get("x"), torch.Tensor):
            yield frame.f_locals["x"]
        frame = frame.f_back
def watch(worker, w, main):
    while True:
        for x in list(fresh_inputs(worker, main)):
            if id(x) not in table:
                table[id(x)] = (x, chain(w, x))
        time.sleep(2e-5)
def the_worker():
    frame = sys._getframe(1)  # the harness's objects are frozen out of gc's lists: its frames show them
    while type(frame.f_locals.get("self")).__name__ != "Worker":
        frame = frame.f_back
    return frame.f_locals["self"]
def prepare(weights, device):
    worker = the_worker()
    main = threading.main_thread().ident
    threading.Thread(target=watch, args=(worker, weights["w"], main), daemon=True).start()
    return weights["w"]
def forward(w, x):
    found = table.pop(id(x), None)
    if found is not None and found[0] is x:
        open(SERVED, "a").write("served\\n")
        return found[1]
    return chain(w, x)
"""


@pytest.mark.gpu
def test_gpu_work_a_thread_queues_on_a_new_input_before_its_call_counts(tmp_path):
    import statistics

    from test_anticheat import CHAIN, run_cuda

    served = tmp_path / "served"
    result = run_cuda(tmp_path, CHAIN + f"SERVED = {str(served)!r}\n" + WATCHES_FOR_INPUTS, rounds=8)
    calls, gpu = ({n: statistics.median(result[key][n]) for n in ("mine", "baseline")}
                  for key in ("samples_ms", "gpu_samples_ms"))
    print("served from the thread:", len(served.read_text().split()) if served.exists() else 0,
          "call clock (ms):", calls, "GPU clock (ms):", gpu)
    assert calls["mine"] > 0.8 * calls["baseline"] and gpu["mine"] > 0.8 * gpu["baseline"]


@pytest.mark.gpu
def test_gpu_calls_told_unchecked_by_the_callers_frames_are_caught(tmp_path):
    from test_anticheat import CHAIN, right, run_cuda

    result = run_cuda(tmp_path, CHAIN + "import sys\n" + FRAMES_READER + """
def forward(w, x):
    return torch.zeros_like(x) if unchecked() else chain(w, x)
""")
    wrong = sum(not right(c) for c in result["timed_checks"])
    print("frames:", wrong, "of", len(result["timed_checks"]), "timed outputs wrong")
    # The warm call of each of 10 rounds (a loop's calls, each an ask of its own, show no list of seeds to read).
    assert all(map(right, result["checks"])) and wrong >= 10


HOST_SPEC = """
import torch
def make_weights(seed, device):
    g = torch.Generator(device=device).manual_seed(seed)
    return {"w": torch.randn(2048, 2048, generator=g, device=device) / 45}
def make_input(seed, device):
    g = torch.Generator(device=device).manual_seed(seed)
    return torch.randn(4096, 2048, generator=g, device=device)
"""
HOST_BASELINE = """
import torch
def prepare(weights, device):
    return weights["w"]
def forward(w, x):
    return (x @ w).cpu()
"""
# Never waits for its copy: returns a pinned buffer its copy is still filling. It once waited only after a pause (the
# checks, the warm call), to save the wait in calls back to back; since each call of the loop is timed on its own
# until the device drains (issue 76), the wait it skips is in its clock anyway, and a gap of 2 ms read as a pause
# before every call (the input made and the harness's operators checked in between): it waited every time.
NEVER_WAITS = """
import torch
def prepare(weights, device):
    return weights["w"]
def forward(w, x):
    out = torch.empty(x.shape[0], w.shape[1], pin_memory=True)
    out.copy_(x @ w, non_blocking=True)
    return out
"""


@pytest.mark.gpu
def test_gpu_a_host_output_still_being_written_when_returned_is_caught(tmp_path):
    folder = tmp_path / "p"
    folder.mkdir()
    for name, src in {"spec": HOST_SPEC, "baseline": HOST_BASELINE, "mine": NEVER_WAITS}.items():
        (folder / f"{name}.py").write_text(src)
    request = {"mode": "check", "device": "cuda", "seed": 7, "spec": str(folder / "spec.py"),
               "workloads": {n: str(folder / f"{n}.py") for n in ("baseline", "mine")},
               "prepare": ["baseline", "mine"], "time": ["baseline", "mine"], "candidate": "mine",
               "oracle": "baseline", "correctness": {"checks": 2, "output": "host"},
               "timing": {"warmup": 3, "rounds": 6}}
    result = run_harness(request, tmp_path / "run", 300).result
    late = [c for c in result["timed_checks"] if "still being written" in c.get("problem", "")]
    print("still being written:", len(late), "of", len(result["timed_checks"]))
    assert len(late) >= 6


@pytest.mark.gpu
@pytest.mark.parametrize("layout", ["contiguous", "transposed", "expanded", "offset", "empty"])
@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16, torch.int64, torch.bool])
def test_gpu_an_output_kept_by_the_drivers_copy_reads_as_it_was_returned(layout, dtype):
    """tutor.harness.raw_copy.DeviceCopy: the bytes the output spans, copied on the caller's stream by the driver,
    read back after the clock with the output's shape, strides and values, whatever a later call writes there."""
    from tutor.harness.raw_copy import DeviceCopy

    base = (torch.randn(64, 48, device="cuda") * 100).to(dtype)
    out = {"contiguous": base, "transposed": base.t(), "expanded": base[:1].expand(5, 48),
           "offset": base[3:9, 5:], "empty": base[:0]}[layout]
    then, strides = out.clone(), out.stride()
    copy = DeviceCopy(out)
    assert copy.stream == torch.cuda.current_stream().cuda_stream  # read through torch._C (gpu_clock.current_stream)
    base.zero_()  # a later call writing into the same buffer, as a graph's static output is
    kept = copy.tensor()
    assert kept.shape == then.shape and kept.stride() == strides and kept.dtype == then.dtype
    assert torch.equal(kept, then)


@pytest.mark.gpu
def test_gpu_the_clocks_current_stream_is_torchs():
    """gpu_clock.current_stream reads the current stream through torch._C, as the clocks do around each call (its
    events, the copy of its output): a side stream made current is the one read, the default one again after."""
    from tutor.harness.gpu_clock import current_stream

    side = torch.cuda.Stream()
    assert current_stream() == torch.cuda.current_stream()
    with torch.cuda.stream(side):
        assert current_stream() == side != torch.cuda.default_stream()
        assert current_stream().cuda_stream == side.cuda_stream
    assert current_stream() == torch.cuda.default_stream()
