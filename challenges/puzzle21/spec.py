"""Inputs for puzzle21: one projection of a batch of token states, out = x @ w, in fp32.

x is [TOKENS, FEATURES], w is [FEATURES, OUTPUTS]: 64 tokens of 8192 features projected to 4096 outputs. The
weights are 128 MB, more than any L2 holds, so the time to beat is DRAM's: every weight read once, the tokens'
2 MB and the 1 MB output besides.
"""

import torch

TOKENS, FEATURES, OUTPUTS = 64, 8192, 4096
_WEIGHT_STREAM, _INPUT_STREAM = 1 << 43, 1 << 44


def make_weights(seed: int, device: str) -> dict:
    """The projection [FEATURES, OUTPUTS], scaled by FEATURES**-0.5 so the outputs stay near unit size."""
    g = torch.Generator(device="cpu").manual_seed(_WEIGHT_STREAM + seed)
    return {"w": (torch.randn(FEATURES, OUTPUTS, generator=g) * FEATURES**-0.5).to(device)}


def make_input(seed: int, device: str) -> torch.Tensor:
    """The token states [TOKENS, FEATURES], fp32, row-major."""
    g = torch.Generator(device=device).manual_seed(_INPUT_STREAM + seed)
    return torch.randn(TOKENS, FEATURES, generator=g, device=device)


def least_work(l2_bytes: int) -> dict:
    """The least one forward() must do on any GPU (tutor.grading.floor): read every weight once in fp32 (the
    output is compared at fp32's rounding, so nothing narrower), and do every multiply-add."""
    return {"hbm_bytes": max(0, FEATURES * OUTPUTS * 4 - l2_bytes), "flops": 2 * TOKENS * FEATURES * OUTPUTS,
            "flop_dtype": "fp32",
            "what": f"{FEATURES} x {OUTPUTS} fp32 weights read once, {TOKENS} tokens projected through them"}
