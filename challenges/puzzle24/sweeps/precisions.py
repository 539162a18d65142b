"""Puzzle 24 on one CUDA GPU: what each of its workloads costs a call, the rate it reaches, its error, and the
matrix kernels it runs.

    PYTHONPATH=. python challenges/puzzle24/sweeps/precisions.py [--calls 10] [--json OUT]

Each workload (the baseline, the reference, every alternative and cheat) runs in a process of its own, as a grade
runs it (TF32's setting is per process): prepared, warmed on the spec's warm-up inputs, then --calls calls on fresh
inputs, the GPU synchronised after each. Printed per workload: ms a call (median), TFLOP/s of the tower's
multiply-adds, the relative L2 of its scores against the baseline's fp32 on the same input, and the kernels that
took most of one call's GPU time (the torch profiler's names: they say which instructions ran). `--device cpu`
runs the arithmetic alone: a check of the script, not a number.
"""

from __future__ import annotations

import argparse
import json
import statistics
import time
from pathlib import Path

FOLDER = Path(__file__).parents[1]
WORKLOADS = ["baseline.py", "solution/workload.py",
             *sorted(str(p.relative_to(FOLDER)) for p in (FOLDER / "alternatives").glob("*.py")),
             "cheats/fp8_round_trip.py"]


def measure(workload: str, calls: int, device: str, sizes: dict | None = None) -> dict:
    """One workload's figures; `sizes` (BATCH, FEATURES, HIDDEN, SCORES) in place of the spec's, for a CPU's check."""
    import torch
    from torch.profiler import ProfilerActivity, profile

    from tutor.harness.loading import load_module

    spec = load_module(FOLDER / "spec.py", "p24_spec", ())
    for name, value in (sizes or {}).items():
        setattr(spec, name, value)
    baseline = load_module(FOLDER / "baseline.py", "p24_baseline", ())
    weights = spec.make_weights(0, device)
    x = spec.make_input(0, device)
    expected = baseline.forward(baseline.prepare(weights, device), x).double()  # before the workload sets anything
    module = load_module(FOLDER / workload, "p24_workload", ())
    state = module.prepare(dict(weights), device)
    for warm in spec.warmup_inputs(0, device):
        module.forward(state, warm)
    out = module.forward(state, x).double()
    error = float((out - expected).norm() / expected.norm())
    times = []
    for seed in range(1, calls + 1):
        x = spec.make_input(seed, device)
        if device == "cuda":
            torch.cuda.synchronize()
        began = time.perf_counter()
        module.forward(state, x)
        if device == "cuda":
            torch.cuda.synchronize()
        times.append((time.perf_counter() - began) * 1e3)
    ms = statistics.median(times)
    kernels = []
    if device == "cuda":
        with profile(activities=[ProfilerActivity.CUDA]) as prof:
            module.forward(state, x)
            torch.cuda.synchronize()
        events = sorted(prof.key_averages(), key=lambda e: -e.self_device_time_total)[:4]
        kernels = [(e.key[:90], round(e.self_device_time_total / 1e3, 3)) for e in events]
    flops = spec.least_work(0)["flops"]
    return {"workload": workload, "ms_a_call": ms, "tflops": flops / (ms * 1e-3) / 1e12, "rel_l2": error,
            "kernels_ms": kernels}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--calls", type=int, default=10)
    parser.add_argument("--device", default="cuda")
    parser.add_argument("--json")
    parser.add_argument("--workload", help=argparse.SUPPRESS)  # one workload, in a process of its own
    args = parser.parse_args()
    if args.workload:
        print(json.dumps(measure(args.workload, args.calls, args.device)))
        return
    from challenges.process_sweeps import each_in_its_own_process

    results = []
    for workload, figures in each_in_its_own_process(__file__, WORKLOADS, ["--calls", str(args.calls),
                                                                            "--device", args.device]):
        results.append(figures)
        print(f"{workload:32s} {figures['ms_a_call']:8.3f} ms a call  {figures['tflops']:7.1f} TFLOP/s  "
              f"relative L2 {figures['rel_l2']:.2e}", flush=True)
        for name, ms in figures["kernels_ms"]:
            print(f"    {ms:8.3f} ms  {name}", flush=True)
    if args.json:
        Path(args.json).write_text(json.dumps({"calls": args.calls, "results": results}, indent=1))


if __name__ == "__main__":
    main()
