"""Keep the per-request calls, let the library batch them: inside torch.distributed's coalescing manager,
the 256 all-reduces are queued and issued as one grouped NCCL call when the block ends."""

import torch
import torch.distributed as dist
from torch.distributed.distributed_c10d import _coalescing_manager


def prepare(weights: dict, device: str):
    """This rank's halves, as the harness hands them (spec.shard): w1's columns and w2's rows."""
    return {"w1": weights["w1"], "w2": weights["w2"]}


def forward(w: dict, x: torch.Tensor) -> torch.Tensor:
    partial = torch.relu(x @ w["w1"]) @ w["w2"]
    with _coalescing_manager(device=partial.device):
        for row in partial:
            dist.all_reduce(row)
    return partial
