"""torch's own RMSNorm (torch.nn.functional.rms_norm): one call, the kernel torch ships for it. A library call is
a fix only once its profile says so: how many kernels does it launch, and how busy do they keep DRAM?
"""

import torch


def prepare(weights: dict, device: str):
    return weights


def forward(state: dict, x: torch.Tensor) -> torch.Tensor:
    return torch.nn.functional.rms_norm(x, (x.shape[1],), state["gain"], 1e-6)
