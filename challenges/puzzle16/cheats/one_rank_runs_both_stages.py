"""Cheat, a rank that does every rank's work (issue 37): in prepare() rank 1 is sent stage 0's weights (untimed),
and since every rank is given the same input, rank 1 runs both stages from it and hands y to rank 0: one
handoff instead of two, and rank 0 idles. Must get: refused at fair play (rank 1 keeps both stages' weights,
twice its shard, past the spec's RANK_SLACK_BYTES: tutor.harness.shards)."""

import torch
import torch.distributed as dist
import torch.nn.functional as F


def prepare(weights: dict, device: str):
    w = weights["w"].contiguous()
    if dist.get_rank() == 0:
        dist.send(w, 1)
        return {"w": w}
    w0 = torch.empty_like(w)
    dist.recv(w0, 0)
    return {"w0": w0, "w": w}


def forward(state: dict, x: torch.Tensor) -> torch.Tensor:
    if dist.get_rank() == 0:
        y = torch.empty_like(x)
        dist.recv(y, 1)
        return y
    y = F.gelu(x @ state["w0"]) @ state["w"]
    dist.send(y, 0)
    return y
