"""Correctness on fresh inputs, then interleaved timing of every workload.

Interleaving (a fresh random order each round) spreads clock, thermal and
neighbour drift evenly over the workloads, so per-round ratios stay fair.
Every input after warm-up comes from fresh entropy drawn at the moment it is
made, so no workload can know it in advance, and every timed output of the
candidate is checked too, so work skipped only when timed is caught.
"""

from __future__ import annotations

import random
import secrets

from tutor.harness.checks import compare, kept, own_copy, scrub
from tutor.harness.guard import SideWork
from tutor.harness.loading import call_workload, warmup_inputs

_order = random.SystemRandom()


def fresh_input(spec, device):
    """An input from a seed nothing in the process has seen: not derived from the request's seed."""
    return call_workload("spec.make_input", spec.make_input, secrets.randbelow(2**62), device.name)


def check_and_time(request: dict, spec, forward, device, sink, guard) -> dict:
    names = request["time"]
    candidate, oracle = request["candidate"], request["oracle"]
    timing = request["timing"]

    sink.stage("warmup", "compiling and warming up")
    warm = warmup_inputs(spec, request["seed"] + 7, device.name)
    rounds_of_warmup = max(timing["warmup"], len(warm))
    with device.range("warmup"):
        for i in range(rounds_of_warmup):
            for name in names:
                forward(name, warm[i % len(warm)])
            sink.progress("warmup", i + 1, rounds_of_warmup)
    device.synchronize()
    for name in names:  # held or from an idle GPU: each workload's host, seen while the GPU is held
        device.calibrate(name, lambda name=name: forward(name, own_copy(warm[0])))

    side = SideWork()
    sink.stage("checking", f"{candidate} against {oracle}")
    checks = []
    for _ in range(request["correctness"]["checks"]):
        x = fresh_input(spec, device)
        # Each workload gets its own copy (one that writes into its input changes no one else's), and
        # the candidate's output is copied as it returns, before the oracle runs.
        mine = kept(forward(candidate, own_copy(x)))
        checks.append(compare(mine, forward(oracle, own_copy(x))))
    device.synchronize()
    guard.verify()

    rounds = timing["rounds"]
    samples = {name: [] for name in names}
    timed_checks = []
    sink.stage("timing", f"{rounds} interleaved rounds")
    for r in range(rounds):
        order = names[:]
        _order.shuffle(order)
        # A fresh input every round (made outside the timer): no output can be memoised per input.
        x = fresh_input(spec, device)
        mine = ref = None
        for name in order:
            its_x = own_copy(x)
            ms, out = device.time_call_ms(lambda: forward(name, its_x), name)
            samples[name].append(ms)
            if name == candidate:
                mine = kept(out)
            elif mine is None:
                scrub(out)  # made before the candidate's call: neither the object nor its memory is left to it
            elif name == oracle:
                ref = out  # made after it: nothing of it existed to be reused
            del out
        if ref is None:
            ref = forward(oracle, own_copy(x))
        timed_checks.append(compare(mine, ref))
        del mine, ref
        guard.verify()  # every round: a patch undone before the end still counts
        sink.progress("timing", r + 1, rounds)
    hidden = None if device.cuda else side.violation(sum(samples.get(candidate, [])))
    if hidden:  # on CUDA the host clock already waits for the whole device
        guard.note(hidden)
    charged = device.settle(samples)
    return {"checks": checks, "timed_checks": timed_checks, "samples_ms": samples, "host_timed": charged,
            "gpu_samples_ms": {n: ms for n, ms in device.gpu_samples_ms().items() if n in samples},
            "clocks": device.clocks(), "timing_note": device.timing_note}
