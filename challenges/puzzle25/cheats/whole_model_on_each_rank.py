"""Cheat, each rank doing every rank's work (issue 37): in prepare() the ranks swap their stages (untimed), so each
holds all eight layers; a call then runs half the batch through the whole model on each GPU and gathers the
halves, no pipeline at all: close to twice the baseline's speed, above the reference's. Must get: refused at
fair play (each rank keeps twice its shard of GPU memory, past the spec's RANK_SLACK_BYTES: tutor.harness.shards)."""

import torch
import torch.distributed as dist
import torch.nn.functional as F


def prepare(weights: dict, device: str):
    rank = dist.get_rank()
    mine = weights["layers"]
    theirs = []
    for w in mine:
        got = {name: torch.empty_like(t) for name, t in w.items()}
        for name in ("w1", "w2"):  # rank 0 sends first, rank 1 receives first: one order on both sides
            if rank == 0:
                dist.send(w[name].contiguous(), 1)
                dist.recv(got[name], 1)
            else:
                dist.recv(got[name], 0)
                dist.send(w[name].contiguous(), 0)
        theirs.append(got)
    return mine + theirs if rank == 0 else theirs + mine


def forward(layers: list, x: torch.Tensor) -> torch.Tensor:
    part = x.chunk(dist.get_world_size())[dist.get_rank()]
    for w in layers:
        part = part + F.gelu(part @ w["w1"]) @ w["w2"]
    parts = [torch.empty_like(part) for _ in range(dist.get_world_size())]
    dist.all_gather(parts, part.contiguous())
    return torch.cat(parts)
