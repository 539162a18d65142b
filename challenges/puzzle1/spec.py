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


def least_work(l2_bytes: int) -> dict:
    """The least one forward() must do on any GPU (tutor.grading.floor): read every weight once, at the
    fewest bits any quantisation within the 0.11 tolerance keeps (4; fp8 keeps 8), less what L2 can
    hold from the call before. The matmuls are 2 FLOPs a weight, at the fp8 tensor cores' rate."""
    weights = LAYERS * HIDDEN * HIDDEN
    return {"hbm_bytes": max(0, weights // 2 - l2_bytes), "flops": 2 * weights, "flop_dtype": "fp8",
            "what": f"{weights // 2 / 1e6:.0f} MB of weights at 4 bits each, less the {l2_bytes / 1e6:.0f} MB "
                    "L2 can keep from the call before"}
