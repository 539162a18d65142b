"""Puzzle 25 on two CUDA GPUs: a call's time against the number of micro-batches the batch is cut into.

    PYTHONPATH=. python challenges/puzzle25/sweeps/microbatches.py [--counts 1 2 4 8 16 32] [--calls 20] [--profile]
        [--workload sweeps/variants/narrow_handoffs.py] [--set HANDOFF_CTAS=2] [--json OUT]

The reference (solution/workload.py), or --workload (any of the puzzle's files with a MICROBATCHES), with its
MICROBATCHES set to each count in turn (and any
other module constant --set names, before its prepare()), one rank a GPU as a grade runs them (tutor.harness.ranks), the ranks lined up before each call; a call's time is its slowest rank's,
median over --calls after warm-up. One micro-batch is the baseline's schedule; more shrink the ends of the pipeline
(each GPU idles for one micro-batch's stage) and the matmuls alike. Printed per count: ms a call, the speed-up
over one micro-batch, two stages' ideal speed-up with M micro-batches (2M / (M + 1): the ends alone, the
matmuls as fast as whole ones), and the relative L2 against the baseline's output. With --profile, each rank's
GPU time a call by kind of kernel (matmuls, NCCL's, the rest: torch.profiler over 3 calls after the timed ones):
whether the micro-batches' matmuls run slower than whole ones.
`--device cpu` runs it on two gloo ranks at a CPU's sizes: a check of the script.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

FOLDER = Path(__file__).parents[1]
CPU_SIZES = {"TOKENS": 64, "HIDDEN": 128, "FFN": 256}


def in_rank(rank: int, world: int, message: dict) -> dict:
    """In a rank: each count's times and its error against the baseline's output."""
    import torch.distributed as dist

    from challenges.rank_sweeps import kernel_ms, timed_calls_ms
    from tutor.harness.loading import load_module

    device = "cuda" if dist.get_backend() == "nccl" else "cpu"
    spec = load_module(FOLDER / "spec.py", "p25_spec", ())
    for name, value in (CPU_SIZES if device == "cpu" else {}).items():
        setattr(spec, name, value)
    weights = spec.shard(spec.make_weights(0, device), rank, world)
    x = spec.make_input(0, device)
    baseline = load_module(FOLDER / "baseline.py", "p25_baseline", ())
    expected = baseline.forward(baseline.prepare(weights, device), x).float()
    reference = load_module(FOLDER / message["workload"], "p25_reference", ())
    for setting in message["settings"]:
        name, value = setting.split("=")
        setattr(reference, name, int(value))
    layers = reference.prepare(weights, device)
    figures = []
    for count in message["counts"]:
        reference.MICROBATCHES = count
        call = lambda: reference.forward(layers, x)  # noqa: E731
        times = timed_calls_ms(call, message["calls"])
        out = call()
        error = float((out.float() - expected).norm() / expected.norm())
        figures.append({"times_ms": times, "rel_l2": error,
                        **({"kernel_ms": kernel_ms(call, device == "cuda")} if message["profile"] else {})})
    return {"figures": figures}


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--counts", type=int, nargs="+", default=[1, 2, 4, 8, 16, 32])
    parser.add_argument("--calls", type=int, default=20)
    parser.add_argument("--device", default="cuda")
    parser.add_argument("--profile", action="store_true")
    parser.add_argument("--workload", default="solution/workload.py")
    parser.add_argument("--set", dest="settings", nargs="*", default=[], metavar="NAME=INT")
    parser.add_argument("--json", type=Path)
    args = parser.parse_args()
    from tutor.harness import ranks

    group = ranks.start(2, in_rank, "nccl" if args.device == "cuda" else "gloo")
    try:
        replies = group.ask("sweep", limit_s=540, counts=args.counts, calls=args.calls, profile=args.profile,
                           workload=args.workload, settings=args.settings)
    finally:
        group.stop()
    from challenges.rank_sweeps import slowest_median_ms

    rows = {}
    for n, count in enumerate(args.counts):
        ranks_figures = [r["figures"][n] for r in replies]
        rows[count] = {"ms_a_call": slowest_median_ms([f["times_ms"] for f in ranks_figures]),
                       "rel_l2": max(f["rel_l2"] for f in ranks_figures),
                       **({"kernel_ms_by_rank": [f["kernel_ms"] for f in ranks_figures]} if args.profile else {})}
    one = rows[args.counts[0]]["ms_a_call"]
    for count, row in rows.items():
        row["speedup"] = one / row["ms_a_call"]
        row["two_stage_ideal"] = 2 * count / (count + 1)
        print(f"{count:3d} micro-batches  {row['ms_a_call']:8.3f} ms a call  {row['speedup']:5.2f}x "
              f"(two stages' ideal {row['two_stage_ideal']:4.2f}x)  relative L2 {row['rel_l2']:.2e}")
        for rank, kinds in enumerate(row.get("kernel_ms_by_rank", [])):
            print(f"      rank {rank} GPU ms a call: " + "  ".join(f"{k} {v:.3f}" for k, v in kinds.items()))
    if args.json:
        args.json.write_text(json.dumps(rows, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
