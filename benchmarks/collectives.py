"""What moving data between GPUs costs on this host, measured through the tutor's rank launcher
(tutor.harness.ranks): the scenes issue 18's multi-GPU puzzles are built from.

    python benchmarks/collectives.py [--world 2] [--json FILE]

- all-reduce time by size (latency-bound small, bandwidth-bound large), with the bus bandwidth NCCL's
  tests report (2 (n - 1) / n x bytes / time);
- 256 all-reduces of 64 KiB one by one, against the same bytes as one bucket.

Each figure is the median over repeats (after warm-up) of the slowest rank's time, the ranks lined up
before each scene; the collectives line them up between repeats. With two or more GPUs: NCCL, one GPU a rank; without: gloo on the CPU, smaller sizes
(the launcher works, the figures say nothing of GPUs).
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from tutor.harness import ranks  # noqa: E402

KIB = 1024
REPEATS, WARMUP = 15, 3


def _timed(fn, device) -> float:
    """One call of fn, in ms, the device drained before and after."""
    import torch

    sync = torch.cuda.synchronize if device.type == "cuda" else (lambda: None)
    sync()
    start = time.perf_counter()
    fn()
    sync()
    return (time.perf_counter() - start) * 1e3


def measure(rank: int, world: int, message: dict) -> dict:
    """One figure in this rank: its time for each repeat of the scene the message names."""
    import torch
    import torch.distributed as dist

    device = torch.device("cuda", rank) if dist.get_backend() == "nccl" else torch.device("cpu")
    scene, size = message["scene"], message["bytes"]
    floats = size // 4
    if scene == "all_reduce":
        x = torch.ones(floats, device=device)
        call = lambda: dist.all_reduce(x)  # noqa: E731
    elif scene == "separate":  # size is each piece's; 256 pieces
        pieces = [torch.ones(floats, device=device) for _ in range(256)]
        call = lambda: [dist.all_reduce(p) for p in pieces]  # noqa: E731
    else:
        raise ValueError(f"unknown scene {scene!r}")
    ms = [_timed(call, device) for _ in range(WARMUP + REPEATS)][WARMUP:]
    return {"ms": ms, "device": str(device)}


def figures(group: "ranks.RankGroup", sizes: list[int]) -> list[dict]:
    """A row a scene: all-reduce at each size, then 256 separate 64 KiB ones and the same bytes as one."""
    rows = []
    for scene, size in [*(("all_reduce", n) for n in sizes), ("separate", 64 * KIB), ("all_reduce", 256 * 64 * KIB)]:
        replies = group.ask("measure", aligned=True, scene=scene, bytes=size)
        ms = statistics.median(ranks.slowest([r["ms"] for r in replies]))
        total = size * (256 if scene == "separate" else 1)
        world = group.world
        rows.append({"scene": scene, "bytes": size, "total_bytes": total, "ms": ms, "device": replies[0]["device"],
                     "bus_gbps": 2 * (world - 1) / world * total / (ms * 1e-3) / 1e9})
    return rows


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--world", type=int, default=2)
    parser.add_argument("--json", type=Path)
    args = parser.parse_args()
    import torch

    gpus = torch.cuda.device_count()  # NVML's count: asking the driver here would leave forked ranks without CUDA
    backend = "nccl" if gpus >= args.world else "gloo"
    sizes = [8 * KIB, 64 * KIB, 1024 * KIB, 16 * 1024 * KIB] + ([512 * 1024 * KIB] if backend == "nccl" else [])
    group = ranks.start(args.world, measure, backend)
    try:
        rows = figures(group, sizes)
    finally:
        group.stop()
    print(f"{args.world} ranks, {backend} ({rows[0]['device']} on rank 0); median of the slowest rank over {REPEATS}")
    print(f"{'scene':<28}{'bytes':>12}{'ms':>10}{'bus GB/s':>10}")
    for row in rows:
        name = "256 x all_reduce, separate" if row["scene"] == "separate" else "all_reduce"
        print(f"{name:<28}{row['total_bytes']:>12}{row['ms']:>10.3f}{row['bus_gbps']:>10.2f}")
    separate, bucket = rows[-2]["ms"], rows[-1]["ms"]
    print(f"the same {rows[-1]['total_bytes']} bytes as one bucket: {separate / bucket:.1f}x faster than 256 separate")
    if args.json:
        args.json.write_text(json.dumps({"world": args.world, "backend": backend, "rows": rows}, indent=1))


if __name__ == "__main__":
    main()
