"""The four layers in bf16, eager: the oracle for correctness."""

import torch
import torch.nn.functional as F


def prepare(weights: dict, device: str):
    return weights["weights"]


def forward(ws, x: torch.Tensor) -> torch.Tensor:
    with torch.inference_mode():
        for w in ws:
            x = F.linear(x, w)
        return x
