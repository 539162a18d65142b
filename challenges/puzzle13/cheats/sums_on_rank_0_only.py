"""Cheat, a rank whose output is not read (issue 37): the partial outputs are summed onto rank 0 alone (one
reduce, half an all-reduce's traffic), and rank 1 returns its own partial sum, which no one used to check.
Must get: refused at correctness (every rank's output is checked: rank 1's is half the block's)."""

import torch
import torch.distributed as dist


def prepare(weights: dict, device: str):
    return {"w1": weights["w1"], "w2": weights["w2"]}


def forward(w: dict, x: torch.Tensor) -> torch.Tensor:
    partial = torch.relu(x @ w["w1"]) @ w["w2"]
    dist.reduce(partial, dst=0)
    return partial
