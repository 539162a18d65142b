"""No kernel of your own: a transposed view made contiguous. torch's copy kernel reads the view with a
stride too, so how well it does is for the profile to say."""

import torch


def prepare(weights: dict, device: str):
    return weights


def forward(state: dict, keys: torch.Tensor) -> torch.Tensor:
    return keys.t().contiguous()
