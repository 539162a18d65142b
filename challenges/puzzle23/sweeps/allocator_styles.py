"""Puzzle 23 on one CUDA GPU: what each of its workloads costs a call and holds, at the spec's sizes or others.

    PYTHONPATH=. python challenges/puzzle23/sweeps/allocator_styles.py [--calls 10] [--hidden 2048 --ffn 8192]
                                                                     [--prompts 8] [--json OUT]

Each workload (the baseline, the reference, every alternative, and the two cheats that hold the memory the budget
refuses: cheats/over_the_budget, the allocator left as it comes, and cheats/rounded_blocks) runs in a process of its
own, as a grade runs it (the allocator's settings and statistics are per process): prepared, warmed on the spec's
warm-up inputs, its peak statistics reset, then --calls calls on fresh inputs. Printed per workload: ms a call
(median, the GPU synchronised after each), the peak allocated and reserved MB over the calls, the reserve against
the baseline's (the budget allows spec.MEMORY_SLACK more), and the caching allocator's cudaMalloc and cudaFree calls
a call. `--device cpu` runs the arithmetic alone (no figures of memory): a check of the script, not a number.
"""

from __future__ import annotations

import argparse
import json
import statistics
import time
from pathlib import Path

FOLDER = Path(__file__).parents[1]
WORKLOADS = ["baseline.py", "solution/workload.py", *sorted(
    str(p.relative_to(FOLDER)) for p in (FOLDER / "alternatives").glob("*.py")), "cheats/over_the_budget.py",
             "cheats/rounded_blocks.py"]
SIZES = ("HIDDEN", "FFN", "PROMPTS")


def measure(workload: str, calls: int, sizes: dict, device: str) -> dict:
    import torch

    from tutor.harness.loading import load_module

    spec = load_module(FOLDER / "spec.py", "p23_spec", ())
    module = load_module(FOLDER / workload, "p23_workload", ())
    for name, value in sizes.items():
        for m in (spec, module):
            if hasattr(m, name):
                setattr(m, name, value)
    for m in (spec, module):  # the widths that follow from the hidden size
        m.HEAD = m.HIDDEN // m.HEADS
        m.KV = m.KV_HEADS * m.HEAD
    state = module.prepare(spec.make_weights(0, device), device)
    cuda = device == "cuda"
    for x in spec.warmup_inputs(0, device):
        module.forward(state, x)
    if cuda:
        torch.cuda.synchronize()
        torch.cuda.reset_peak_memory_stats()
        before = torch.cuda.memory_stats()
    times = []
    for seed in range(calls):
        x = spec.make_input(seed, device)
        began = time.perf_counter()
        out = module.forward(state, x)
        if cuda:
            torch.cuda.synchronize()
        times.append((time.perf_counter() - began) * 1e3)
    figures = {"workload": workload, "ms_a_call": statistics.median(times), "checksum": float(out.double().sum())}
    if cuda:
        after = torch.cuda.memory_stats()
        figures.update({"peak_allocated_mb": after["allocated_bytes.all.peak"] / 2**20,
                        "peak_reserved_mb": after["reserved_bytes.all.peak"] / 2**20,
                        **{f"{key}_a_call": (after.get(key, 0) - before.get(key, 0)) / calls
                           for key in ("num_device_alloc", "num_device_free")}})
    return figures


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--calls", type=int, default=10)
    parser.add_argument("--hidden", type=int)
    parser.add_argument("--ffn", type=int)
    parser.add_argument("--prompts", type=int)
    parser.add_argument("--device", default="cuda")
    parser.add_argument("--json")
    parser.add_argument("--workload", help=argparse.SUPPRESS)  # one workload, in a process of its own
    args = parser.parse_args()
    sizes = {name: getattr(args, name.lower()) for name in SIZES if getattr(args, name.lower())}
    if args.workload:
        print(json.dumps(measure(args.workload, args.calls, sizes, args.device)))
        return
    flags = ["--calls", str(args.calls), "--device", args.device,
             *[f for name, value in sizes.items() for f in (f"--{name.lower()}", str(value))]]
    from challenges.process_sweeps import each_in_its_own_process

    results, baseline_mb = [], None
    for workload, figures in each_in_its_own_process(__file__, WORKLOADS, flags):
        results.append(figures)
        memory = ""
        if "peak_reserved_mb" in figures:
            baseline_mb = baseline_mb or figures["peak_reserved_mb"]
            memory = (f"peak allocated {figures['peak_allocated_mb']:7.0f} MB, reserved "
                      f"{figures['peak_reserved_mb']:7.0f} MB ({figures['peak_reserved_mb'] / baseline_mb:.2f}x the "
                      "baseline's); a call: cudaMalloc "
                      f"{figures['num_device_alloc_a_call']:5.1f}, cudaFree {figures['num_device_free_a_call']:5.1f}")
        print(f"{workload:36s} {figures['ms_a_call']:8.2f} ms a call  {memory}  (sum {figures['checksum']:.6g})",
              flush=True)
    if args.json:
        Path(args.json).write_text(json.dumps({"flags": flags, "results": results}, indent=1))


if __name__ == "__main__":
    main()
