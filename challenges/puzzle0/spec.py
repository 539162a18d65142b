"""Inputs for puzzle0: a batch of user feature rows and the scaler's learned affine parameters."""

import torch

FEATURES = 64
ROWS = 2048


def make_weights(seed: int, device: str) -> dict:
    g = torch.Generator().manual_seed(seed)
    return {
        "scale": (1.0 + 0.1 * torch.randn(FEATURES, generator=g)).to(device),
        "shift": (0.1 * torch.randn(FEATURES, generator=g)).to(device),
    }


def make_input(seed: int, device: str) -> torch.Tensor:
    g = torch.Generator().manual_seed(seed)
    # Features on wildly different scales, as raw logs produce them.
    return (torch.randn(ROWS, FEATURES, generator=g) * 5.0 + 3.0).to(device)
