"""Cheat, less work than the scores need: each weight replaced in prepare() by its best rank-RANK approximation
(two thin factors from a randomized SVD, as a cheat in a hurry would take them), so a call does an eighth of the multiply-adds, in fp32 as the baseline does. The
weights are drawn at grade time with no low-rank structure to find. Must get: refused at correctness.
"""

import torch
import torch.nn.functional as F

RANK_SHARE = 8  # keep 1/8 of each weight's rank


def factors(w: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    rank = max(1, min(w.shape) // RANK_SHARE)
    u, s, v = torch.svd_lowrank(w, q=rank, niter=2)
    return u * s, v.T


def prepare(weights: dict, device: str):
    return {name: factors(t) if name.startswith("w") else t for name, t in weights.items()}


def forward(w: dict, x: torch.Tensor) -> torch.Tensor:
    with torch.inference_mode():
        h = x
        for n in range(3):
            left, right = w[f"w{n}"]
            h = (h @ left) @ right + w[f"b{n}"]
            if n < 2:
                h = F.gelu(h)
        return h
