"""No kernel of your own: counting ids into bins is torch.bincount, whose CUDA kernel keeps its bins in
shared memory when they are few. It returns int64 (the baseline's counts are int32), and it first reads
the largest id to size its output, a wait on the GPU every call."""

import torch

EXPERTS = 64


def prepare(weights: dict, device: str):
    return None


def forward(state, expert: torch.Tensor) -> torch.Tensor:
    return torch.bincount(expert, minlength=EXPERTS).to(torch.int32)
