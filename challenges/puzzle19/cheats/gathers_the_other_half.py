"""Cheat, a rank that does every rank's work (issue 37): in prepare() each rank gathers the other rank's halves
of every layer (untimed), so each runs the whole step alone with no all-reduce. Handed the whole model, as
before, rank 0 alone read about twice the reference. Must get: refused at fair play (each rank keeps twice its
shard of GPU memory, past the spec's RANK_SLACK_BYTES: tutor.harness.shards)."""

import torch
import torch.distributed as dist


def _gathered(t: torch.Tensor, dim: int) -> torch.Tensor:
    parts = [torch.empty_like(t) for _ in range(dist.get_world_size())]
    dist.all_gather(parts, t.contiguous())
    return torch.cat(parts, dim=dim)


def prepare(weights: dict, device: str):
    return [{"w1": _gathered(w["w1"], 1), "w2": _gathered(w["w2"], 0)} for w in weights["layers"]]


def forward(layers: list, x: torch.Tensor) -> torch.Tensor:
    for w in layers:
        x = x + torch.relu(x @ w["w1"]) @ w["w2"]
    return x
