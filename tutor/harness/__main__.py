"""The workload harness: `python -m tutor.harness REQUEST.json`, started by tutor.runner.

Runs in its own process so a crash, hang or OOM in learner code never touches the
tutor. Modes: `check` (correctness + interleaved timing) and `profile` (one
PyTorch-profiler trace of one workload). Raw samples go back; statistics are
computed by the tutor.
"""

from __future__ import annotations

import contextlib

import json
import random
import sys
import traceback
from pathlib import Path

from tutor.harness.events import EventSink
from tutor.harness.loading import HarnessFailure, call_workload, load_module, warmup_inputs

WORKLOAD_API = ("prepare", "forward")
SPEC_API = ("make_weights", "make_input")


def main(argv: list[str]) -> int:
    sink = EventSink()
    try:
        request = json.loads(Path(argv[0]).read_text())
        result = run(request, sink)
        sink.emit("result", data=result)
        return 0
    except HarnessFailure as f:
        print(f.tb or f.message, file=sys.stderr)
        sink.emit("error", kind=f.kind, message=f.message, where=f.where, traceback=f.tb[-4000:])
        return 3
    except Exception as e:  # a harness bug: still report it through the protocol
        tb = traceback.format_exc()
        print(tb, file=sys.stderr)
        sink.emit("error", kind="bad_request", message=f"{type(e).__name__}: {e}", where="harness", traceback=tb[-4000:])
        return 4


def run(request: dict, sink: EventSink) -> dict:
    sink.stage("importing", "torch")
    import torch

    from tutor.harness.device import Device
    from tutor.harness.memory_facts import CaptureCounter, memory_facts

    if request["device"] == "cuda" and not torch.cuda.is_available():
        raise HarnessFailure("no_gpu", "this puzzle needs a CUDA GPU, and torch sees none "
                             f"(torch {torch.__version__}, built for CUDA {torch.version.cuda})")
    if request["device"] == "cpu":
        torch.set_num_threads(1)  # CPU puzzles time one thread, so speedups compare across machines
    device = Device(request["device"], flush_l2=request["mode"] == "check")
    # Before any workload loads, so every capture is counted, torch.compile's included.
    captures = CaptureCounter() if device.cuda else None
    torch.manual_seed(request["seed"])
    spec = load_module(Path(request["spec"]), "spec", SPEC_API)
    names = request["prepare"]
    modules = {n: load_module(Path(request["workloads"][n]), n, WORKLOAD_API) for n in names}

    states, resident = {}, {}
    for name, module in modules.items():
        sink.stage("preparing", name)
        before = device.allocated_bytes()
        weights = call_workload("spec.make_weights", spec.make_weights, request["seed"], device.name)
        states[name] = call_workload(f"{name}.prepare()", module.prepare, weights, device.name)
        del weights
        # What prepare() left alive: lets a puzzle check, say, that weights really are stored in fp8.
        resident[name] = device.allocated_bytes() - before
    device.poison_free_memory()
    prepared = device.allocated_bytes()

    def forward(name, x):
        return call_workload(f"{name}.forward()", modules[name].forward, states[name], x)

    result = {"env": device.describe()}
    if request["mode"] == "check":
        from tutor.harness.timing import check_and_time
        result.update(check_and_time(request, spec, forward, device, sink))
        if callable(getattr(spec, "facts", None)):  # what the workloads did, for a puzzle's grader
            result["facts"] = call_workload("spec.facts", spec.facts, states)
        # Memory kept after prepare(): caches built lazily in forward() show up here.
        result["memory"] = {"resident_bytes": resident, "growth_bytes": device.allocated_bytes() - prepared}
    elif request["mode"] == "profile":
        result.update(profile(request, spec, forward, device, sink))
        if device.cuda:
            for key, value in memory_facts(captures).items():  # the profiled window's peaks stay
                result["memory"].setdefault(key, value)
    elif request["mode"] == "memory":
        result.update(serve_for_memory(request, spec, forward, device, sink, captures))
    elif request["mode"] in ("kernels", "timeline"):
        result.update(kernels(request, spec, forward, device, sink))
    else:
        raise HarnessFailure("bad_request", f"unknown mode {request['mode']!r}")
    return result


def _warm_inputs(request: dict, spec, forward, device, sink: EventSink) -> list:
    """The inputs to profile, after warm-up calls (compilation, autotuning) outside any profiled range."""
    name, iterations, seed = request["profile"]["workload"], request["profile"]["iterations"], request["seed"]
    inputs = [call_workload("spec.make_input", spec.make_input, seed + 1 + i, device.name) for i in range(iterations)]
    warm = warmup_inputs(spec, seed + 7, device.name)
    sink.stage("warmup", name)
    for i in range(max(request["timing"]["warmup"], len(warm))):
        forward(name, warm[i % len(warm)])
    for x in inputs:  # each profiled input once, so nothing is first seen inside the profile
        forward(name, x)
    device.synchronize()
    return inputs


def serve_for_memory(request: dict, spec, forward, device, sink: EventSink, captures) -> dict:
    """Serve the warm-up inputs (every shape the puzzle uses) twice, then say what memory that took."""
    from tutor.harness.memory_facts import memory_facts

    name = request["prepare"][0]
    inputs = warmup_inputs(spec, request["seed"], device.name)
    sink.stage("serving", f"{name}: {len(inputs)} inputs, twice, for its memory")
    for _ in range(2):
        for x in inputs:
            forward(name, x)
    device.synchronize()
    return {"workload": name, "memory": memory_facts(captures) if device.cuda else {}}


def profile(request: dict, spec, forward, device, sink: EventSink) -> dict:
    """One PyTorch-profiler trace of the workload's profiled iterations."""
    from tutor.harness.torch_profile import profile_iterations

    name = request["profile"]["workload"]
    inputs = _warm_inputs(request, spec, forward, device, sink)
    sink.stage("profiling", f"{name}: {len(inputs)} iterations")
    trace = Path(request["profile"]["trace_path"])
    memory = profile_iterations(lambda i: forward(name, inputs[i]), len(inputs), trace)
    return {"trace_path": str(trace), "memory": memory, "workload": name}


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


if __name__ == "__main__":
    random.seed()
    sys.exit(main(sys.argv[1:]))
