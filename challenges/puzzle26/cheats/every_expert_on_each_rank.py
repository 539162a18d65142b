"""Cheat, each rank doing every rank's work (issue 37): in prepare() the ranks swap all their experts (untimed), so
each holds all eight; a call then runs half the tokens through whichever expert they chose on each GPU, whatever
expert it is, and gathers the halves: perfectly even, no placement to work out. Must get: refused at fair play
(each rank keeps twice its shard of GPU memory, past the spec's RANK_SLACK_BYTES: tutor.harness.shards)."""

import torch
import torch.distributed as dist
import torch.nn.functional as F


def prepare(weights: dict, device: str):
    rank, theirs = dist.get_rank(), []
    for expert in weights["experts"]:
        got = {name: torch.empty_like(t) for name, t in expert.items()}
        for name in ("w1", "w2"):  # rank 0 sends first, rank 1 receives first: one order on both sides
            if rank == 0:
                dist.send(expert[name], 1)
                dist.recv(got[name], 1)
            else:
                dist.recv(got[name], 0)
                dist.send(expert[name], 0)
        theirs.append(got)
    every = weights["experts"] + theirs if rank == 0 else theirs + weights["experts"]
    return {"experts": every, "router": weights["router"], "bias": weights["bias"]}


def forward(w: dict, x: torch.Tensor) -> torch.Tensor:
    part = x.chunk(dist.get_world_size())[dist.get_rank()]
    logits = part.float() @ w["router"] + w["bias"]
    gate, choice = logits.softmax(dim=1).max(dim=1)
    out = torch.zeros_like(part)
    for index, expert in enumerate(w["experts"]):
        rows = (choice == index).nonzero().squeeze(1)
        out[rows] = (gate[rows, None] * (F.gelu(part[rows] @ expert["w1"]) @ expert["w2"])).to(x.dtype)
    parts = [torch.empty_like(out) for _ in range(dist.get_world_size())]
    dist.all_gather(parts, out.contiguous())
    return torch.cat(parts)
