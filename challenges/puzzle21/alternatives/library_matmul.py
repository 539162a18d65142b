"""torch.matmul: cuBLAS's fp32 GEMM, one call (torch keeps TF32 off for fp32 matmuls unless asked, and TF32's
1e-3 would miss the tolerance). A library call is a fix only once its profile says so: how many kernels does it
launch, and what do they write besides the output?
"""

import torch


def prepare(weights: dict, device: str):
    return weights


def forward(state: dict, x: torch.Tensor) -> torch.Tensor:
    return x @ state["w"]
