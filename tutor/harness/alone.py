"""One workload in the harness's own process: the profile, kernels (Nsight Compute), timeline (Nsight
Systems), allocations (the allocator's history) and memory modes. Timed grades run elsewhere
(tutor.harness.lockstep).
"""

from __future__ import annotations

import contextlib
import json
from pathlib import Path

from tutor.harness.events import EventSink
from tutor.harness.guard import Guard
from tutor.harness.loading import HarnessFailure, call_workload, load_module, warmup_inputs
from tutor.harness.memory_history import in_phase


def iteration_count(n: int) -> str:
    return f"{n} iteration{'s' if n != 1 else ''}"


def run_alone(request: dict, sink: EventSink) -> dict:
    """Profile, kernels, timeline and memory modes: one workload, in this process."""
    from tutor.harness.compile_report import CompileWatch
    from tutor.harness.memory_facts import CaptureCounter, memory_facts
    from tutor.harness.worker import apis, setup

    [name] = request["prepare"]
    role = "candidate" if name == request.get("candidate") else "ruler"
    device = setup(request, timing=False, role=role)
    # Before any workload loads, so every capture is counted, torch.compile's included.
    captures = CaptureCounter() if device.cuda else None
    compiled = CompileWatch()
    # Before learner code: from here on it cannot open the reference solution or the progress db.
    # A puzzle's own workload profiled alone is the ruler's side, as in a grade: no guard, and
    # torch.compile writes its kernels into the comparators' cache that the guard would refuse.
    if role == "candidate":
        Guard(request.get("protected", {}))
    serves = "serving" in request  # a server replayed against the spec's trace (issue 18)
    if serves and request["mode"] != "profile":
        raise HarnessFailure("bad_request", f"{request['mode']} needs a workload called call by call, and this "
                             "puzzle's is a server replayed against a trace of requests: profile it with the "
                             "PyTorch profiler (not built yet for the others, issue 18)")
    spec_api, workload_api = apis(request)
    spec = load_module(Path(request["spec"]), "spec", spec_api)
    module = load_module(Path(request["workloads"][name]), name, workload_api)
    recording = request["mode"] == "allocations"
    if recording and not device.cuda:
        raise HarnessFailure("no_gpu", "the memory profiler reads the CUDA allocator: it needs a CUDA GPU")
    if recording:  # from before the weights exist: every byte the workload makes is in the history
        from tutor.harness import memory_history
        memory_history.start()
    sink.stage("preparing", name)
    from tutor.harness import shards  # with ranks, this rank's shard alone, as in a grade

    weights = in_phase("prepare", shards.given_weights, spec, request, device.name)
    state = in_phase("prepare", call_workload, f"{name}.prepare()", module.prepare, weights, device.name)
    del weights
    if not recording:  # its fill of every cached free block would show in the history as allocations of ours
        device.poison_free_memory()

    def forward(name, x):
        return call_workload(f"{name}.forward()", module.forward, state, x)

    result = {"env": device.describe()}
    if request["mode"] == "profile":
        result.update(profile_serving(request, spec, module, state, sink) if serves else
                      profile(request, spec, forward, device, sink))
        if device.cuda:
            for key, value in memory_facts(captures).items():  # the profiled window's peaks stay
                result["memory"].setdefault(key, value)
        result["memory"].update({k: v for k, v in compiled.report().items() if k != "reasons"})
    elif request["mode"] == "memory":
        result.update(serve_for_memory(request, spec, forward, device, sink, captures))
    elif request["mode"] == "allocations":
        result.update(allocations(request, spec, forward, device, sink))
    elif request["mode"] in ("kernels", "timeline"):
        result.update(kernels(request, spec, forward, device, sink))
    else:
        raise HarnessFailure("bad_request", f"unknown mode {request['mode']!r}")
    return result


def run_alone_in_ranks(request: dict, sink: EventSink) -> dict:
    """A multi-GPU workload profiled: a process a GPU (tutor.harness.ranks), each running it as run_alone
    does, in step (their collectives need each other). Rank 0's trace is the profile's; each other rank's
    lies beside it (trace.rankN.json), and only rank 0 reports its stages."""
    from tutor.harness import ranks

    if request["mode"] != "profile":
        raise HarnessFailure("bad_request", f"{request['mode']} runs one workload in one process, and this puzzle "
                             f"runs a process on each of {request['ranks']} GPUs: not built yet (issue 18); "
                             "profile it with the PyTorch profiler, or grade it")

    def in_rank(rank: int, world: int, message: dict) -> dict:
        mine = dict(request)
        if rank:
            trace = Path(request["profile"]["trace_path"])
            beside = trace.with_name(f"{trace.stem}.rank{rank}{trace.suffix}")
            mine["profile"] = {**request["profile"], "trace_path": str(beside)}
        result = run_alone(mine, sink)
        if request["device"] == "cuda":  # every rank at once: the probe is a collective
            from tutor.harness.link_probe import all_reduce_bus_gbps

            peak = all_reduce_bus_gbps()
            result["comm"] = {"link_peak_gbps": peak} if peak else {}
        # As the tutor reads it (JSON), so the pipe carries plain values (torch's version object is not one).
        return json.loads(json.dumps(result, default=str))

    group = ranks.start(request["ranks"], in_rank, "nccl" if request["device"] == "cuda" else "gloo",
                        in_child=lambda rank: rank and sink.close())
    try:
        return group.ask("run", limit_s=24 * 3600.0)[0]  # the tutor's own time limit ends a run that hangs
    finally:
        group.stop()


def _warm_inputs(request: dict, spec, forward, device, sink: EventSink) -> list:
    """The inputs to profile, after warm-up calls (compilation, autotuning) outside any profiled range."""
    name, iterations, seed = request["profile"]["workload"], request["profile"]["iterations"], request["seed"]
    inputs = [call_workload("spec.make_input", spec.make_input, seed + 1 + i, device.name) for i in range(iterations)]
    warm = warmup_inputs(spec, seed + 7, device.name)
    sink.stage("warmup", name)
    for i in range(max(request["timing"]["warmup"], len(warm))):
        in_phase("warmup", forward, name, warm[i % len(warm)])
    for x in inputs:  # each profiled input once, so nothing is first seen inside the profile
        in_phase("warmup", forward, name, x)
    device.synchronize()
    return inputs


def serve_for_memory(request: dict, spec, forward, device, sink: EventSink, captures) -> dict:
    """Serve the warm-up inputs (every shape the puzzle uses) twice, then say what memory that took."""
    from tutor.harness.memory_facts import graph_pool_mb, memory_facts

    name = request["prepare"][0]
    inputs = warmup_inputs(spec, request["seed"], device.name)
    sink.stage("serving", f"{name}: {len(inputs)} inputs, twice, for its memory")
    pool_by_input = []
    for _ in range(2):
        for x in inputs:
            forward(name, x)
            if device.cuda:
                pool_by_input.append(graph_pool_mb())
    device.synchronize()
    if not device.cuda:
        return {"workload": name, "memory": {}}
    return {"workload": name, "memory": {**memory_facts(captures), "graph_pool_mb_by_warmup": pool_by_input}}


def profile(request: dict, spec, forward, device, sink: EventSink) -> dict:
    """One PyTorch-profiler trace of the workload's profiled iterations."""
    from tutor.harness.torch_profile import profile_iterations

    name = request["profile"]["workload"]
    inputs = _warm_inputs(request, spec, forward, device, sink)
    sink.stage("profiling", f"{name}: {iteration_count(len(inputs))}")
    trace = Path(request["profile"]["trace_path"])
    memory = profile_iterations(lambda i: forward(name, inputs[i]), len(inputs), trace)
    return {"trace_path": str(trace), "memory": memory, "workload": name}


def allocations(request: dict, spec, forward, device, sink: EventSink) -> dict:
    """The profiled iterations after warm-up, all three phases in the allocator's history; the snapshot saved."""
    from tutor.harness import memory_history

    name = request["profile"]["workload"]
    inputs = _warm_inputs(request, spec, forward, device, sink)
    sink.stage("profiling", f"{name}: {iteration_count(len(inputs))}, every allocation recorded")
    for x in inputs:
        in_phase("iterations", forward, name, x)
    device.synchronize()
    snapshot = Path(request["profile"]["snapshot_path"])
    memory_history.save(snapshot)
    return {"snapshot_path": str(snapshot), "workload": name, "iterations": len(inputs)}


def kernels(request: dict, spec, forward, device, sink: EventSink) -> dict:
    """The profiled iterations inside the NVTX range the Nsight tool is told to read.

    Nsight Compute filters on `infprof.kernels`; an Nsight Systems timeline
    also needs one `infprof.iter` range per forward() to count iterations by.
    """
    name = request["profile"]["workload"]
    timeline = request["mode"] == "timeline"
    inputs = _warm_inputs(request, spec, forward, device, sink)
    tool = "Nsight Systems" if timeline else "Nsight Compute (each kernel is replayed)"
    sink.stage("profiling", f"{name}: {len(inputs)} iterations under {tool}")
    with device.range("kernels"):
        for x in inputs:
            with device.range("iter") if timeline else contextlib.nullcontext():
                forward(name, x)
        device.synchronize()
    return {"workload": name}


def profile_serving(request: dict, spec, module, state, sink: EventSink) -> dict:
    """A server's profile: a warm-up replay of one trace, then a replay of another under the PyTorch profiler
    with each step() an iteration, and what the replay showed (tutor.harness.serving.figures, and tokens a step)."""
    from torch.profiler import record_function

    from tutor.harness import serving
    from tutor.harness.torch_profile import WindowNeverOpened, profiled
    from tutor.harness.worker import step_tokens
    from tutor.protocol import TORCH_ITER_RANGE

    name, limit_s = request["profile"]["workload"], request["serving"]["limit_s"]
    drawn = request["serving"].get("draws", 0)
    steps = []

    def replay(trace: list, after_step=lambda: None) -> list:
        server = call_workload(f"{name}.server()", module.server, state)

        def step(*draws):
            with record_function(TORCH_ITER_RANGE):
                produced = step_tokens(name, server, *draws)
            after_step()
            steps.append(sum(len(t) for t in produced.values()))
            return produced

        submit = lambda rid, prompt, max_new: call_workload(  # noqa: E731
            f"{name}'s server.submit()", server.submit, rid, prompt, max_new)
        return serving.replay(trace, submit, step, limit_s, draw=serving.Draws(drawn) if drawn else None)

    sink.stage("warmup", f"{name}: one replay of a trace, unprofiled")
    replay(serving.draw_trace(spec, request["seed"] + 7))
    steps.clear()
    trace = serving.draw_trace(spec, request["seed"] + 1)
    window = serving.profiled_window(trace)
    sink.stage("profiling", f"{name}: one replay of a trace, steps {window[0]} to {sum(window)} under the profiler")
    trace_path = Path(request["profile"]["trace_path"])
    try:
        with profiled(trace_path, window) as profiling:
            served = replay(trace, profiling.step)
        opened = len(steps) > window[0]
    except WindowNeverOpened:
        opened = False
    if not opened:  # a trace with no step in it: say why instead
        raise HarnessFailure("workload_error", f"{name}'s server served the whole trace in {len(steps)} steps, "
                             f"by step {window[0]}, where its profile starts: a serving profile records steps "
                             "from there on.")
    figures = serving.figures(served)  # the whole replay's, the window's kernels aside
    busy = [n for n in steps if n]
    figures["tokens_per_step"] = sum(busy) / len(busy) if busy else 0.0  # requests served a step, while serving
    return {"trace_path": str(trace_path), "memory": profiling.memory, "workload": name, "serving": figures}

