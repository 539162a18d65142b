"""No kernel of your own: the scores are a batched matmul, each key head's 8 queries [8, 128] against its
keys [8192, 128]^T, which cuBLAS tiles so that a key is read once for the whole group. The keys stay
bf16 (cuBLAS accumulates in fp32); the scores come back as bf16 and are widened, within the tolerance.
"""

import math

import torch


def prepare(weights: dict, device: str):
    return weights


def forward(state: dict, q: torch.Tensor) -> torch.Tensor:
    k = state["k"]  # [BATCH, KV_HEADS, SEQ, DIM]
    batch, kv_heads, seq, dim = k.shape
    grouped = q.view(batch, kv_heads, -1, dim)  # query head h = key head h // GROUP, member h % GROUP
    return (grouped @ k.transpose(-1, -2)).float().view(batch, -1, seq) / math.sqrt(dim)
