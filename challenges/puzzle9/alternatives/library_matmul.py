"""No kernel of your own: the projection is a matmul, and cuBLAS has one. The features are [K, M], so
x.T is [M, K] in column-major order, which cuBLAS reads as it is (no copy); fp32 throughout (TF32 stays
off, as torch's default keeps it), so the numbers are the kernel's up to the order of the sums.
"""

import torch


def prepare(weights: dict, device: str):
    return weights


def forward(w: dict, x: torch.Tensor) -> torch.Tensor:
    return x.T @ w["w"]
