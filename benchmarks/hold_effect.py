"""What a serving loop pays per call, against one call timed at a time: why a grade's call clock is a loop.

    python benchmarks/hold_effect.py puzzle3 alternatives/compiled_gemlite [--calls 30] [--json]

A grade's call clock (tutor/harness/gpu_clock.py) once timed one call at a time with the GPU held
and charged it the larger of its GPU time and its host enqueue. On the H100 hosts that read
host-bound calls 2-6x slower than a loop runs them; the call clock is now a warm call and a few calls
back to back. Per workload this prints:
- loop: N calls back to back on fresh inputs, one sync at the end: milliseconds per call (the truth);
- loop host: the host's time per call inside that loop;
- idle: one call's host time from an idle GPU;
- held: one call's host time while the GPU is held, after a pause (a grade's worker waits on its pipe);
- held+warm: the same, with an untimed call on another input just before, inside the same hold;
- gpu: the GPU's own time for one call, from events under the hold.
"""

from __future__ import annotations

import argparse
import json
import statistics
import time

import torch

from tutor.catalog import get_puzzle
from tutor.harness.hold import GpuHold
from tutor.harness.loading import load_module

PAUSE_S = 0.005  # about what a worker waits between its timed calls while the other side runs


def measure(puzzle_id: str, which: str, calls: int) -> dict:
    puzzle = get_puzzle(puzzle_id)
    spec = load_module(puzzle.folder / "spec.py", "spec", ("make_weights", "make_input"))
    path = puzzle.workload_path(which) if which in puzzle.workloads else puzzle.solution_path(which)
    module = load_module(path, f"m_{which.replace('/', '_')}", ("prepare", "forward"))
    state = module.prepare(spec.make_weights(1, "cuda"), "cuda")
    inputs = [spec.make_input(100 + i, "cuda") for i in range(calls + 1)]
    warm = getattr(spec, "warmup_inputs", None)
    for x in (warm(7, "cuda") if warm else []) * 2 + inputs[:5]:
        module.forward(state, x)
    torch.cuda.synchronize()
    hold = GpuHold()

    def forward(i: int):
        return module.forward(state, inputs[i % len(inputs)])

    # The serving loop: back to back, the host never waits for the GPU.
    loop_host = []
    start = time.perf_counter_ns()
    for i in range(calls):
        t = time.perf_counter_ns()
        forward(i)
        loop_host.append((time.perf_counter_ns() - t) / 1e6)
    torch.cuda.synchronize()
    loop_ms = (time.perf_counter_ns() - start) / 1e6 / calls

    def one(held_ms: float, warm_call: bool) -> tuple[float, float]:
        torch.cuda.synchronize()
        time.sleep(PAUSE_S)
        e0, e1 = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        if held_ms:
            hold.hold_ms(held_ms)
        if warm_call:
            forward(calls)
        t = time.perf_counter_ns()
        e0.record()
        forward(0)
        e1.record()
        host = (time.perf_counter_ns() - t) / 1e6
        torch.cuda.synchronize()
        return host, e0.elapsed_time(e1)

    idle = [one(0.0, False)[0] for _ in range(calls)]
    enqueue = statistics.median(idle)
    held_ms = 3 * max(enqueue, 0.05) * 2 + 0.2  # as a grade sizes it, for two calls
    held = [one(held_ms, False) for _ in range(calls)]
    warm_held = [one(held_ms, True) for _ in range(calls)]
    med = statistics.median
    result = {"puzzle": puzzle_id, "which": which, "loop_ms": loop_ms, "loop_host_ms": med(loop_host),
              "idle_host_ms": med(idle), "held_host_ms": med(h for h, _ in held),
              "warm_held_host_ms": med(h for h, _ in warm_held), "gpu_ms": med(g for _, g in warm_held),
              "hold_ms": held_ms}
    result["held_call_ms"] = max(result["gpu_ms"], result["held_host_ms"])
    result["warm_call_ms"] = max(result["gpu_ms"], result["warm_held_host_ms"])
    return result


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("puzzle")
    parser.add_argument("which", nargs="+", help="workload names, reference, or alternatives/NAME")
    parser.add_argument("--calls", type=int, default=30)
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    for which in args.which:
        r = measure(args.puzzle, which, args.calls)
        if args.json:
            print(json.dumps(r), flush=True)
        else:
            print(f"{args.puzzle} {which}: loop {r['loop_ms']:.4f} ms/call (host {r['loop_host_ms']:.4f}); "
                  f"host idle {r['idle_host_ms']:.4f}, held {r['held_host_ms']:.4f}, held+warm "
                  f"{r['warm_held_host_ms']:.4f}; gpu {r['gpu_ms']:.4f}; call read held {r['held_call_ms']:.4f}, "
                  f"held+warm {r['warm_call_ms']:.4f}", flush=True)


if __name__ == "__main__":
    main()
