"""Correctness on fresh inputs, then interleaved timing of every workload.

Interleaving (a fresh random order each round) spreads clock, thermal and
neighbour drift evenly over the workloads, so per-round ratios stay fair.
"""

from __future__ import annotations

import random

from tutor.harness.checks import compare
from tutor.harness.loading import call_workload, warmup_inputs


def check_and_time(request: dict, spec, forward, device, sink) -> dict:
    seed, names = request["seed"], request["time"]
    candidate, oracle = request["candidate"], request["oracle"]
    timing = request["timing"]

    def make_input(k):
        return call_workload("spec.make_input", spec.make_input, k, device.name)

    sink.stage("warmup", "compiling and warming up")
    warm = warmup_inputs(spec, seed + 7, device.name)
    rounds_of_warmup = max(timing["warmup"], len(warm))
    with device.range("warmup"):
        for i in range(rounds_of_warmup):
            for name in names:
                forward(name, warm[i % len(warm)])
            sink.progress("warmup", i + 1, rounds_of_warmup)
    device.synchronize()

    # Inputs the workloads have never seen, drawn from the grade-time seed.
    sink.stage("checking", f"{candidate} against {oracle}")
    checks = []
    for k in range(request["correctness"]["checks"]):
        x = make_input(seed + 1000 + k)
        checks.append(compare(forward(candidate, x), forward(oracle, x)))
    device.synchronize()

    rounds = timing["rounds"]
    samples = {name: [] for name in names}
    sink.stage("timing", f"{rounds} interleaved rounds")
    rng = random.Random(seed)
    for r in range(rounds):
        order = names[:]
        rng.shuffle(order)
        # A fresh input every round (made outside the timer): no output can be memoised per input.
        x = make_input(seed + 2000 + r)
        for name in order:
            ms, _ = device.time_call_ms(lambda: forward(name, x), name)
            samples[name].append(ms)
        sink.progress("timing", r + 1, rounds)
    charged = device.settle(samples)
    return {"checks": checks, "samples_ms": samples, "host_timed": charged}
