"""The tensor-parallel block as first written: each rank computes its partial output, then adds it to the
other rank's one request at a time, 256 all-reduces of 8 KB, as the code that served one request did."""

import torch
import torch.distributed as dist


def prepare(weights: dict, device: str):
    """This rank's halves: w1's columns and w2's rows for its share of the hidden units."""
    rank, world = dist.get_rank(), dist.get_world_size()
    part = weights["w1"].shape[1] // world
    cols = slice(rank * part, (rank + 1) * part)
    return {"w1": weights["w1"][:, cols].contiguous(), "w2": weights["w2"][cols].contiguous()}


def forward(w: dict, x: torch.Tensor) -> torch.Tensor:
    partial = torch.relu(x @ w["w1"]) @ w["w2"]
    for row in partial:  # a view of each request's row: summed in place across the ranks
        dist.all_reduce(row)
    return partial
