"""A mixture-of-experts layer as the reference implementations write it: a loop over the experts,
each gathering its tokens and running its two small matrix multiplies."""

import torch
import torch.nn.functional as F

EXPERTS = 64


def prepare(weights: dict, device: str):
    return weights


def forward(w: dict, x: dict) -> torch.Tensor:
    tokens, expert = x["x"], x["expert"]
    out = torch.empty_like(tokens)
    for e in range(EXPERTS):
        idx = torch.nonzero(expert == e).squeeze(1)  # how many tokens? the host must ask the GPU
        h = F.gelu(tokens[idx] @ w["up"][e].T)
        out[idx] = h @ w["down"][e].T
    return out
