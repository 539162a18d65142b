"""Cheat, a rank whose output is not read (issue 37): the activations go GPU to GPU as in the reference, but y
never comes back: rank 1 keeps it, and rank 0 returns what it has, its own stage's activations. One handoff
instead of two. Must get: refused at correctness (every rank's output is checked: rank 0's is not y)."""

import torch
import torch.distributed as dist
import torch.nn.functional as F


def prepare(weights: dict, device: str):
    return {"w": weights["w"]}


def forward(state: dict, x: torch.Tensor) -> torch.Tensor:
    if dist.get_rank() == 0:
        h = F.gelu(x @ state["w"])
        dist.send(h, 1)
        return h
    h = torch.empty_like(x)
    dist.recv(h, 0)
    return h @ state["w"]
