"""The handoffs as collectives: with two ranks a broadcast from one is a send to the other. Rank 0
broadcasts h, rank 1 broadcasts y back, both on NCCL's default group, so both stay on the GPUs and cross
NVLink; each rank passes a buffer of the right shape for what it receives.
"""

import torch
import torch.distributed as dist
import torch.nn.functional as F


def prepare(weights: dict, device: str):
    """This rank's stage, as the harness hands it (spec.shard)."""
    return {"w": weights["w"]}


def forward(state: dict, x: torch.Tensor) -> torch.Tensor:
    rank = dist.get_rank()
    h = F.gelu(x @ state["w"]) if rank == 0 else torch.empty_like(x)
    dist.broadcast(h, src=0)
    y = h @ state["w"] if rank == 1 else torch.empty_like(x)
    dist.broadcast(y, src=1)
    return y
