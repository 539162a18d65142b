"""The workload harness: `python -m tutor.harness REQUEST.json`, started by tutor.runner.

Runs in its own process so a crash, hang or OOM in learner code never touches the
tutor. Modes: `check` (correctness + interleaved timing) and `profile` (one
PyTorch-profiler trace of one workload). Raw samples go back; statistics are
computed by the tutor.
"""

from __future__ import annotations

import builtins
import contextlib
import json
import os
import random
import secrets
import sys
import time
import traceback
import types
from pathlib import Path

from tutor.harness.events import EventSink
from tutor.harness.guard import Guard
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

    from tutor.harness import device as device_module, timing
    from tutor.harness.checks import own_copy
    from tutor.harness.memory_facts import CaptureCounter, memory_facts

    if request["device"] == "cuda" and not torch.cuda.is_available():
        raise HarnessFailure("no_gpu", "this puzzle needs a CUDA GPU, and torch sees none "
                             f"(torch {torch.__version__}, built for CUDA {torch.version.cuda})")
    if request["device"] == "cuda":
        _share_autotuning()
    if request["device"] == "cpu":
        torch.set_num_threads(1)  # CPU puzzles time one thread, so speedups compare across machines
    device = device_module.Device(request["device"], flush_l2=request["mode"] == "check")
    # Before any workload loads, so every capture is counted, torch.compile's included.
    captures = CaptureCounter() if device.cuda else None
    # Before any learner code: from here on it cannot open the reference solution or the progress db.
    guard = Guard(request.get("protected", {}))
    # Not the request's seed: a workload can read that (sys.argv), and must not predict anything from it.
    torch.manual_seed(secrets.randbelow(2**62))
    spec = load_module(Path(request["spec"]), "spec", SPEC_API)
    names = request["prepare"]
    checking = request["mode"] == "check"
    guard.candidate = request.get("candidate") if checking else None
    # The learner's code loads last: the other workloads are loaded, fenced and prepared (their own
    # changes to torch are in) and every namespace frozen before any of it runs.
    modules, forwards, states, resident = {}, {}, {}, {}
    # A grade prepares several workloads from the same weights: made once, each gets its own copy.
    shared = call_workload("spec.make_weights", spec.make_weights, request["seed"], device.name) if checking else None
    for name in sorted(names, key=lambda n: n == guard.candidate):
        if name == guard.candidate:
            guard.freeze(*_namespaces(torch, spec, modules, forwards, device, sink))
        modules[name] = load_module(Path(request["workloads"][name]), name, WORKLOAD_API)
        fenced = checking and name != guard.candidate
        forwards[name] = guard.fence(name, modules[name]) if fenced else modules[name].forward
        sink.stage("preparing", name)
        before = device.allocated_bytes()
        weights = (own_copy(shared) if checking else
                   call_workload("spec.make_weights", spec.make_weights, request["seed"], device.name))
        states[name] = call_workload(f"{name}.prepare()", modules[name].prepare, weights, device.name)
        del weights
        # What prepare() left alive: lets a puzzle check, say, that weights really are stored in fp8.
        resident[name] = device.allocated_bytes() - before
    del shared
    device.poison_free_memory()
    prepared = device.allocated_bytes()

    def forward(name, x):
        guard.running = name
        try:
            return call_workload(f"{name}.forward()", forwards[name], states[name], x)
        finally:
            guard.running = None

    result = {"env": device.describe()}
    if checking:
        result.update(timing.check_and_time(request, spec, forward, device, sink, guard))
        if callable(getattr(spec, "facts", None)):  # what the workloads did, for a puzzle's grader
            result["facts"] = call_workload("spec.facts", spec.facts, states)
        # Memory kept after prepare(): caches built lazily in forward() show up here.
        result["memory"] = {"resident_bytes": resident, "growth_bytes": device.allocated_bytes(full=True) - prepared}
        guard.verify()
        result["violations"] = guard.violations
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


def _share_autotuning() -> None:
    """Keep triton's autotune results on disk, so every run of a workload (grade, profile, ncu) runs one config.

    Without it each process tunes anew; under ncu, whose serialised launches distort the timings, the
    autotuner picked another GemLite kernel (2 waves instead of 1) than the graded runs did.
    """
    try:
        import triton
        triton.knobs.autotuning.cache = True
    except (ImportError, AttributeError):
        pass  # no triton, or one without knobs: each run tunes on its own


def _namespaces(torch, spec, modules: dict, forwards: dict, device, sink) -> tuple[dict, dict]:
    """What learner code must leave alone: every change to `strict` counts, to `libraries` only its own."""
    harness = [m for m in list(sys.modules.values()) if getattr(m, "__name__", "").startswith("tutor.")]
    strict = {m.__name__: m for m in (*harness, sys.modules[__name__], time, os, json, random, secrets)}
    strict.update({f"{m.__name__}.{c.__name__}": c for m in harness for c in vars(m).values()
                   if isinstance(c, type) and c.__module__ == m.__name__})
    strict.update({f"{n} workload": m for n, m in modules.items()})
    strict.update({"random.SystemRandom": random.SystemRandom, "torch.cuda.Event": torch.cuda.Event, "spec": spec,
                   "device": device, "sink": sink, "forward()": types.SimpleNamespace(**forwards)})
    libraries = {"builtins": builtins, "torch": torch, "torch.Tensor": torch.Tensor, "torch.cuda": torch.cuda,
                 "torch.nn.functional": torch.nn.functional, "torch.nn.Module": torch.nn.Module,
                 "torch.linalg": torch.linalg}
    return strict, libraries


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
