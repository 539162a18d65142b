"""Puzzle 27 on one CUDA GPU: what each stage's fix is worth, before any grade: a call's time for the baseline and
for each file that fixes one more stage, and how right each one's choices are.

    PYTHONPATH=. python challenges/puzzle27/sweeps/stages.py [--calls 5] [--workloads A.py,B.py] [--json OUT]

Each workload (the baseline, the prototype: stage 1 fixed, graphed_fp32_head: stages 1 and 2, the reference and
compiled_step: all three, gpu_argmax: stage 2's fix alone) runs in a process of its own, as a grade runs it:
prepared, warmed on two calls, then --calls calls on fresh inputs, the GPU synchronised after each. Printed per
workload: ms a call (median), ms a decode step, its speed-up over the baseline, how far a step is from reading the
weights once at the GPU's bandwidth (--hbm-tb-s, an H100's 3.35 by default), and its judged error (spec.judge: each
choice's logit against the best of its step, relative L2). `--device cpu` runs a small model
(tests/test_puzzle27.py's sizes, 16 steps): a check of the script, not a number.
"""

from __future__ import annotations

import argparse
import json
import statistics
import time
from pathlib import Path

FOLDER = Path(__file__).parents[1]
WORKLOADS = ["baseline.py", "prototype.py", "alternatives/graphed_fp32_head.py",
             "solution/workload.py", "alternatives/gpu_argmax.py", "alternatives/compiled_step.py"]
CPU_SIZES = {"LAYERS": 4, "HIDDEN": 64, "HEADS": 4, "KV_HEADS": 2, "HEAD_DIM": 16, "FFN": 256, "VOCAB": 512,
             "BATCH": 2, "PROMPT": 32, "STEPS": 16, "INIT_STD": 0.113}


def measure(workload: str, calls: int, device: str) -> dict:
    """One workload's figures, in this process."""
    import torch

    from tutor.harness.loading import load_module

    spec = load_module(FOLDER / "spec.py", "p27_spec", ())
    for name, value in (CPU_SIZES if device == "cpu" else {}).items():
        setattr(spec, name, value)
    weights = spec.make_weights(0, device)
    module = load_module(FOLDER / workload, "p27_workload", ())
    module.STEPS = spec.STEPS  # each workload keeps its own count of steps: a CPU run's fewer are set on both
    state = module.prepare(weights, device)
    for seed in (100, 101):
        module.forward(state, spec.make_input(seed, device))
    times, errors = [], []
    for seed in range(1, calls + 1):
        inputs = spec.make_input(seed, device)
        if device == "cuda":
            torch.cuda.synchronize()
        began = time.perf_counter()
        tokens = module.forward(state, inputs)
        if device == "cuda":
            torch.cuda.synchronize()
        times.append((time.perf_counter() - began) * 1e3)
        scored, best = spec.judge(weights, inputs, tokens)
        errors.append(float((scored - best).norm() / best.norm()))
    least = spec.least_work(0)["hbm_bytes"]
    return {"workload": workload, "ms_a_call": statistics.median(times), "steps": spec.STEPS,
            "least_hbm_bytes": least, "judged_rel_l2": max(errors)}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--calls", type=int, default=5)
    parser.add_argument("--device", default="cuda")
    parser.add_argument("--hbm-tb-s", type=float, default=3.35)
    parser.add_argument("--json")
    parser.add_argument("--workloads", default=",".join(WORKLOADS),
                        help="which of them, comma-separated (the first is the one the speed-ups divide)")
    parser.add_argument("--workload", help=argparse.SUPPRESS)  # one workload, in a process of its own
    args = parser.parse_args()
    if args.workload:
        print(json.dumps(measure(args.workload, args.calls, args.device)))
        return
    from challenges.process_sweeps import each_in_its_own_process

    results = []
    for workload, figures in each_in_its_own_process(__file__, args.workloads.split(","), ["--calls", str(args.calls),
                                                                            "--device", args.device]):
        results.append(figures)
        base = results[0]["ms_a_call"]
        floor_ms = figures["least_hbm_bytes"] / (args.hbm_tb_s * 1e12) * 1e3
        print(f"{workload:36s} {figures['ms_a_call']:9.2f} ms a call  {figures['ms_a_call'] / figures['steps']:7.3f} "
              f"ms a step  {base / figures['ms_a_call']:5.2f}x  {figures['ms_a_call'] / floor_ms:5.1f}x the bytes' "
              f"time  judged {figures['judged_rel_l2']:.2e}", flush=True)
    if args.json:
        Path(args.json).write_text(json.dumps({"calls": args.calls, "results": results}, indent=1))


if __name__ == "__main__":
    main()
