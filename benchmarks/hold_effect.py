"""Does holding the GPU change a workload's host time? Host time of forward() from an idle GPU and under a hold.

    python benchmarks/hold_effect.py puzzle3 alternatives/compiled_gemlite [--calls 30]

For the GPU-held clock (tutor/harness/gpu_clock.py) to be fair, a call's host enqueue must cost the
same whether or not the GPU is busy: a workload whose host waits on the GPU somewhere (an event
query, a sync hidden in a library) would be charged the hold. Prints median host ms per condition.
"""

from __future__ import annotations

import argparse
import statistics
import time
from pathlib import Path

import torch

from tutor.catalog import get_puzzle
from tutor.harness.hold import GpuHold
from tutor.harness.loading import load_module


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("puzzle")
    parser.add_argument("which", help="a workload name, reference, or alternatives/NAME")
    parser.add_argument("--calls", type=int, default=30)
    args = parser.parse_args()
    puzzle = get_puzzle(args.puzzle)
    path = (puzzle.solution_dir / "workload.py" if args.which == "reference" else
            puzzle.folder / f"{args.which}.py" if "/" in args.which else puzzle.workload_path(args.which))
    spec = load_module(puzzle.folder / "spec.py", "spec", ("make_weights", "make_input"))
    module = load_module(Path(path), "mine", ("prepare", "forward"))
    state = module.prepare(spec.make_weights(1, "cuda"), "cuda")
    x = spec.make_input(2, "cuda")
    for _ in range(5):
        module.forward(state, x)
    torch.cuda.synchronize()
    hold = GpuHold()
    results = {}
    for label, hold_ms in (("idle GPU", 0.0), ("held 2 ms", 2.0), ("held 5 ms", 5.0), ("idle GPU again", 0.0)):
        host = []
        for _ in range(args.calls):
            torch.cuda.synchronize()
            if hold_ms:
                hold.hold_ms(hold_ms)
            start = time.perf_counter_ns()
            module.forward(state, x)
            host.append((time.perf_counter_ns() - start) / 1e6)
            torch.cuda.synchronize()
        results[label] = statistics.median(host)
        print(f"{args.puzzle} {args.which}: host ms per call, {label}: median {results[label]:.4f}", flush=True)


if __name__ == "__main__":
    main()
