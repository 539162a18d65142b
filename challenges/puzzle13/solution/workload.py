"""One all-reduce for the whole batch: the partial outputs are one contiguous [256, 4096] tensor already,
so summing it at once moves the same 2 MB in one collective instead of 256. Each all-reduce pays a fixed
latency (tens of microseconds on NVLink) whatever its size up to about a megabyte: 256 of them are
latency, one is bandwidth.
"""

import torch
import torch.distributed as dist


def prepare(weights: dict, device: str):
    """This rank's halves, as the harness hands them (spec.shard): w1's columns and w2's rows."""
    return {"w1": weights["w1"], "w2": weights["w2"]}


def forward(w: dict, x: torch.Tensor) -> torch.Tensor:
    partial = torch.relu(x @ w["w1"]) @ w["w2"]
    dist.all_reduce(partial)
    return partial
