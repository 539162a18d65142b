"""Honest alternative (NumPy): the same whole-array arithmetic, outside torch.

torch's CPU tensors share memory with NumPy arrays, so the rows go in and come back out
without a copy; what made the baseline slow was the per-row Python loop, not the library.
"""

import numpy as np
import torch


def prepare(weights: dict, device: str):
    return {k: v.numpy() for k, v in weights.items()}


def forward(state, x: torch.Tensor) -> torch.Tensor:
    a = x.numpy()
    mu = a.mean(axis=1, keepdims=True)
    sigma = a.std(axis=1, ddof=1, keepdims=True)  # torch.std is the unbiased estimate
    z = np.clip((a - mu) / (sigma + 1e-5), -3.0, 3.0)
    return torch.from_numpy((z * state["scale"] + state["shift"]).astype(np.float32, copy=False))
