"""Inputs for puzzle9: a 256 -> 32 projection of 524288 tokens' features, fp32, by a hand-written CUDA kernel.

The features come feature-major ([K, M], as the kernel before this one writes them), so a warp's 32
threads read 32 neighbouring tokens at each k: every load is coalesced, and what is left to go wrong
is inside each thread, where its 32 accumulators live.

Enough tokens for 2048 blocks of 256, about two waves at the eight blocks an SM the baseline's bounds
ask for (65536 tokens, tried first on the H100, filled a quarter of one wave: MEASUREMENTS.md), so a
kernel's occupancy and its spills both decide its time.
"""

import torch

M, K, N = 1 << 19, 256, 32
_INPUT_STREAM = 1 << 40


def make_weights(seed: int, device: str) -> dict:
    g = torch.Generator().manual_seed(seed)
    return {"w": (torch.randn(K, N, generator=g) * K**-0.5).to(device)}


def make_input(seed: int, device: str) -> torch.Tensor:
    """Features [K, M], fp32, feature-major."""
    g = torch.Generator(device=device).manual_seed(_INPUT_STREAM + seed)
    return torch.randn(K, M, generator=g, device=device)


def least_work(l2_bytes: int) -> dict:
    """The least one forward() must do on any GPU (tutor.grading.floor): read every feature once and
    write every output once, fp32 (the 512 MB of features do not fit in any L2)."""
    return {"hbm_bytes": max(0, (K * M + M * N) * 4 - l2_bytes),
            "what": f"{K} x {M} fp32 features read and {M} x {N} outputs written"}
