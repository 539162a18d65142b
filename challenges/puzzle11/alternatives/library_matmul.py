"""No kernel of your own: the projection is a matmul, and cuBLAS has one. fp32 throughout (TF32 stays off,
as torch's default keeps it for matmuls), so the numbers are the kernel's up to the order of the sums.
"""

import torch


def prepare(weights: dict, device: str):
    return weights


def forward(w: dict, x: torch.Tensor) -> torch.Tensor:
    return x @ w["w"]
