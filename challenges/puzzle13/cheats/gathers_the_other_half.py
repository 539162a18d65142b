"""Cheat, a rank that does every rank's work (issue 37): in prepare() each rank gathers the other rank's halves
of w1 and w2 (one all_gather each, untimed), so each holds the whole MLP and computes both halves alone, summed
as the all-reduce sums them (a + b, to the bit), with no collective in forward(). Handed the whole model, as
before, this needed no communication at all. Must get: refused at fair play (each rank keeps twice its shard
of GPU memory, past the spec's RANK_SLACK_BYTES: tutor.harness.shards)."""

import torch
import torch.distributed as dist


def prepare(weights: dict, device: str):
    world = dist.get_world_size()
    w1 = [torch.empty_like(weights["w1"]) for _ in range(world)]
    w2 = [torch.empty_like(weights["w2"]) for _ in range(world)]
    dist.all_gather(w1, weights["w1"].contiguous())
    dist.all_gather(w2, weights["w2"].contiguous())
    return list(zip(w1, w2))


def forward(halves: list, x: torch.Tensor) -> torch.Tensor:
    partials = [torch.relu(x @ w1) @ w2 for w1, w2 in halves]
    return partials[0] + partials[1]
