"""What checking every timed call costs, on each clock, for each one-GPU forward() puzzle's baseline.

    python benchmarks/check_cost.py [puzzle4 puzzle5 ...] [--calls 20] [--json]

A grade keeps every timed call's output as it returned (tutor/harness/call_checks.py): on the call
clock, a GPU output is copied once on the caller's stream right after the call, for both sides alike;
the GPU clock's call is kept after its end event, so the GPU clock pays nothing. Per puzzle this prints
the baseline's output, one call of it back to back (calls on fresh inputs, one sync at the end), and the
keep alone back to back: its host time and its GPU time, per call, and its share of the baseline's call.
"""

from __future__ import annotations

import argparse
import json
import statistics
import time

import torch

from tutor.catalog import all_puzzles
from tutor.harness.call_checks import Kept
from tutor.harness.loading import load_module


def per_call_ms(fn, calls: int) -> tuple[float, float]:
    """`fn` back to back `calls` times from an idle GPU: the host's and the device's milliseconds per call."""
    torch.cuda.synchronize()
    start = time.perf_counter_ns()
    for _ in range(calls):
        fn()
    host_ms = (time.perf_counter_ns() - start) / 1e6 / calls
    torch.cuda.synchronize()
    return host_ms, (time.perf_counter_ns() - start) / 1e6 / calls


def measure(puzzle, calls: int) -> dict:
    spec = load_module(puzzle.folder / "spec.py", f"spec_{puzzle.id}", ("make_weights", "make_input"))
    base = load_module(puzzle.workload_path("baseline"), f"base_{puzzle.id}", ("prepare", "forward"))
    state = base.prepare(spec.make_weights(1, "cuda"), "cuda")
    inputs = [spec.make_input(100 + i, "cuda") for i in range(calls)]
    out = base.forward(state, inputs[0])
    samples = {"call": [], "keep_host": [], "keep": []}
    for _ in range(5):  # interleaved: the baseline's calls, then the keep of its output alone
        it = iter(range(10**9))
        samples["call"].append(per_call_ms(lambda: base.forward(state, inputs[next(it) % calls]), calls)[1])
        host_ms, device_ms = per_call_ms(lambda: Kept(out), calls)
        samples["keep_host"].append(host_ms)
        samples["keep"].append(device_ms)
    med = {k: statistics.median(v) for k, v in samples.items()}
    shape = tuple(out.shape) if isinstance(out, torch.Tensor) else type(out).__name__
    mb = out.numel() * out.element_size() / 1e6 if isinstance(out, torch.Tensor) else 0.0
    return {"puzzle": puzzle.id, "output": f"{shape} {getattr(out, 'dtype', '')} on {getattr(out, 'device', '')}",
            "output_mb": mb, "call_ms": med["call"], "keep_host_ms": med["keep_host"], "keep_ms": med["keep"],
            "share": med["keep"] / med["call"]}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("puzzles", nargs="*")
    parser.add_argument("--calls", type=int, default=20)
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    chosen = [p for p in all_puzzles().values() if p.hardware.device == "cuda" and p.hardware.gpus <= 1
              and not p.serving and (not args.puzzles or p.id in args.puzzles)]
    print(f"{torch.cuda.get_device_name()}, torch {torch.__version__}")
    for puzzle in chosen:
        try:
            r = measure(puzzle, args.calls)
        except Exception as e:  # one puzzle's failure (a package missing) leaves the others measured
            print(f"{puzzle.id}: not measured ({type(e).__name__}: {str(e)[:200]})")
            continue
        torch.cuda.empty_cache()
        if args.json:
            print(json.dumps(r))
        print(f"{r['puzzle']}: output {r['output']} ({r['output_mb']:.2f} MB); baseline {r['call_ms']:.4f} ms a call; "
              f"kept {r['keep_ms'] * 1e3:.1f} us a call (host {r['keep_host_ms'] * 1e3:.1f} us), "
              f"{100 * r['share']:.2f}% of the call")


if __name__ == "__main__":
    main()
