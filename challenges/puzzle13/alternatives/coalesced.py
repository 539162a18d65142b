"""Keep the per-request calls, let the library batch them: inside torch.distributed's coalescing manager,
the 256 all-reduces are queued and issued as one grouped NCCL call when the block ends."""

import torch
import torch.distributed as dist
from torch.distributed.distributed_c10d import _coalescing_manager


def prepare(weights: dict, device: str):
    """This rank's halves: w1's columns and w2's rows for its share of the hidden units."""
    rank, world = dist.get_rank(), dist.get_world_size()
    part = weights["w1"].shape[1] // world
    cols = slice(rank * part, (rank + 1) * part)
    return {"w1": weights["w1"][:, cols].contiguous(), "w2": weights["w2"][cols].contiguous()}


def forward(w: dict, x: torch.Tensor) -> torch.Tensor:
    partial = torch.relu(x @ w["w1"]) @ w["w2"]
    with _coalescing_manager(device=partial.device):
        for row in partial:
            dist.all_reduce(row)
    return partial
