"""Puzzle 26 on two CUDA GPUs: each placement of the experts, what a call costs and how the work falls on the GPUs.

    PYTHONPATH=. python challenges/puzzle26/sweeps/placements.py [--calls 20] [--seeds 0 1 2] [--set FFN=16384]
        [--json OUT]

For each seed's weights and each workload (the baseline's placement by index, the reference's by a routed sample,
every alternative's), one rank a GPU as a grade runs them (tutor.harness.ranks): the slowest rank's median call,
and per rank the tokens its experts took and its GPU time a call by kind of kernel (matmuls, NCCL's, the rest:
torch.profiler), so the matmuls' time on each GPU reads against its tokens. --set changes a size of the spec's
(a scene to try: a wider FFN makes the experts' matmuls more of a call). `--device cpu` runs it on two gloo ranks
at a CPU's sizes: a check of the script.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

FOLDER = Path(__file__).parents[1]
WORKLOADS = ["baseline.py", "solution/workload.py",
             *sorted(str(p.relative_to(FOLDER)) for p in (FOLDER / "alternatives").glob("*.py"))]
CPU_SIZES = {"TOKENS": 512, "HIDDEN": 64, "FFN": 32}


def in_rank(rank: int, world: int, message: dict) -> dict:
    """In a rank: each seed's and workload's call times, this rank's tokens and its kernels' time."""
    import torch.distributed as dist

    from challenges.rank_sweeps import kernel_ms, timed_calls_ms
    from tutor.harness.loading import load_module

    device = "cuda" if dist.get_backend() == "nccl" else "cpu"
    spec = load_module(FOLDER / "spec.py", "p26_spec", ())
    sizes = {**(CPU_SIZES if device == "cpu" else {}), **dict(setting.split("=") for setting in message["settings"])}
    for name, value in sizes.items():
        setattr(spec, name, int(value))
    figures = []
    for seed in message["seeds"]:
        whole, x = spec.make_weights(seed, device), spec.make_input(seed, device)
        choice = (x.float() @ whole["router"] + whole["bias"]).argmax(dim=1)
        for n, workload in enumerate(WORKLOADS):
            module = load_module(FOLDER / workload, f"p26_{n}", ())
            state = module.prepare(spec.shard(whole, rank, world), device)
            held = sorted(state["experts"]) if isinstance(state["experts"], dict) else \
                list(range(state["first"], state["first"] + len(state["experts"])))
            call = lambda: module.forward(state, x)  # noqa: E731
            figures.append({"seed": seed, "workload": workload, "experts": held,
                            "tokens": int(sum(int((choice == e).sum()) for e in held)),
                            "times_ms": timed_calls_ms(call, message["calls"]),
                            "kernel_ms": kernel_ms(call, device == "cuda")})
    return {"figures": figures}


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--calls", type=int, default=20)
    parser.add_argument("--seeds", type=int, nargs="+", default=[0, 1, 2])
    parser.add_argument("--device", default="cuda")
    parser.add_argument("--set", dest="settings", nargs="*", default=[], metavar="NAME=INT")
    parser.add_argument("--json", type=Path)
    args = parser.parse_args()
    from challenges.rank_sweeps import slowest_median_ms
    from tutor.harness import ranks

    group = ranks.start(2, in_rank, "nccl" if args.device == "cuda" else "gloo")
    try:
        replies = group.ask("sweep", limit_s=540, seeds=args.seeds, calls=args.calls, settings=args.settings)
    finally:
        group.stop()
    rows = []
    for n, first in enumerate(replies[0]["figures"]):
        per_rank = [r["figures"][n] for r in replies]
        rows.append({"seed": first["seed"], "workload": first["workload"],
                     "ms_a_call": slowest_median_ms([f["times_ms"] for f in per_rank]),
                     "ranks": [{k: f[k] for k in ("experts", "tokens", "kernel_ms")} for f in per_rank]})
    for row in rows:
        base = next(r for r in rows if r["seed"] == row["seed"] and r["workload"] == "baseline.py")
        print(f"seed {row['seed']}  {row['workload']:34s} {row['ms_a_call']:8.3f} ms a call  "
              f"{base['ms_a_call'] / row['ms_a_call']:5.2f}x")
        for rank, figures in enumerate(row["ranks"]):
            kinds = "  ".join(f"{k} {v:.3f}" for k, v in figures["kernel_ms"].items())
            print(f"      rank {rank}: experts {figures['experts']}  {figures['tokens']:6d} tokens  GPU ms: {kinds}")
    if args.json:
        args.json.write_text(json.dumps(rows, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
