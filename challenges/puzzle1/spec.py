"""Inputs for puzzle1: eight 4096x4096 bf16 linear layers and one decode token."""

import torch

LAYERS = 8
HIDDEN = 4096
# Inputs draw from their own stream, so no input ever repeats a row of the weights.
_INPUT_STREAM = 1 << 40


def make_weights(seed: int, device: str) -> dict:
    g = torch.Generator().manual_seed(seed)
    # std K**-0.5 keeps the activations' scale from layer to layer.
    std = HIDDEN**-0.5
    weights = [(torch.randn(HIDDEN, HIDDEN, generator=g) * std).to(torch.bfloat16).to(device) for _ in range(LAYERS)]
    return {"weights": weights}


def make_input(seed: int, device: str) -> torch.Tensor:
    g = torch.Generator().manual_seed(_INPUT_STREAM + seed)
    return torch.randn(1, HIDDEN, generator=g).to(torch.bfloat16).to(device)
