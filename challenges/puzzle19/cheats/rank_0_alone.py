"""Cheat, one rank doing the work while the other idles (issue 37): in prepare() rank 1 sends its halves of every
layer to rank 0 (untimed); rank 0 runs the whole step alone, with no all-reduce, and rank 1 returns its input
untouched, as if its output were not read. Handed the whole model and checked on rank 0 alone, this read about
twice the reference. Must get: refused at correctness (every rank's output is checked: rank 1's is not the
step's) and at fair play (rank 0 keeps twice its shard, past the spec's RANK_SLACK_BYTES)."""

import torch
import torch.distributed as dist


def prepare(weights: dict, device: str):
    if dist.get_rank() == 1:
        for w in weights["layers"]:
            dist.send(w["w1"].contiguous(), 0)
            dist.send(w["w2"].contiguous(), 0)
        return None
    layers = []
    for w in weights["layers"]:
        w1, w2 = torch.empty_like(w["w1"]), torch.empty_like(w["w2"])
        dist.recv(w1, 1)
        dist.recv(w2, 1)
        layers.append({"w1": torch.cat([w["w1"], w1], dim=1), "w2": torch.cat([w["w2"], w2], dim=0)})
    return layers


def forward(layers: list | None, x: torch.Tensor) -> torch.Tensor:
    if layers is None:
        return x.clone()
    for w in layers:
        x = x + torch.relu(x @ w["w1"]) @ w["w2"]
    return x
