"""Reference solution: one pass of whole-tensor ops instead of ~8 small ops per row."""

import torch


def prepare(weights: dict, device: str):
    return weights


def forward(state, x: torch.Tensor) -> torch.Tensor:
    mu = x.mean(dim=1, keepdim=True)
    sigma = x.std(dim=1, keepdim=True)
    z = ((x - mu) / (sigma + 1e-5)).clamp_(-3.0, 3.0)
    return torch.addcmul(state["shift"], z, state["scale"])
