"""Buckets of 32 requests: 8 all-reduces of 256 KB each, as a server that sums each micro-batch as soon as
it is ready would do. Fewer calls than the baseline by 32x, more than one: past each call's fixed cost,
the bytes are the same."""

import torch
import torch.distributed as dist

BUCKET = 32


def prepare(weights: dict, device: str):
    """This rank's halves, as the harness hands them (spec.shard): w1's columns and w2's rows."""
    return {"w1": weights["w1"], "w2": weights["w2"]}


def forward(w: dict, x: torch.Tensor) -> torch.Tensor:
    partial = torch.relu(x @ w["w1"]) @ w["w2"]
    for bucket in partial.split(BUCKET):  # contiguous blocks of rows
        dist.all_reduce(bucket)
    return partial
