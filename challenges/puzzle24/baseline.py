"""Baseline: the scoring tower as its training code defined it, in fp32 throughout."""

import torch
import torch.nn.functional as F


def prepare(weights: dict, device: str):
    return weights


def forward(w: dict, x: torch.Tensor) -> torch.Tensor:
    with torch.inference_mode():
        h = F.gelu(x @ w["w0"] + w["b0"])
        h = F.gelu(h @ w["w1"] + w["b1"])
        return h @ w["w2"] + w["b2"]
