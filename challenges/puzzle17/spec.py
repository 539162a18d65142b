"""Inputs for puzzle17: one decode step's attention scores for 8 requests of a grouped-query attention
layer: 64 query heads in groups of 8 share 8 key heads, 8192 cached keys each, bf16, head size 128.

scores[b, h, s] = q[b, h] . k[b, h // 8, s] / sqrt(128), fp32. The cache holds 134 MB of keys, more than
any L2: every key is needed by the 8 query heads of its group, and whether it comes from DRAM once or
eight times is the question.
"""

import torch

BATCH, KV_HEADS, GROUP, SEQ, DIM = 8, 8, 8, 8192, 128
HEADS = KV_HEADS * GROUP
_WEIGHTS_STREAM, _INPUT_STREAM = 1 << 20, 1 << 40


def make_weights(seed: int, device: str) -> dict:
    """The cached keys [BATCH, KV_HEADS, SEQ, DIM], bf16: the same for every call (the cache of this step)."""
    g = torch.Generator(device=device).manual_seed(_WEIGHTS_STREAM + seed)
    return {"k": torch.randn(BATCH, KV_HEADS, SEQ, DIM, generator=g, device=device).to(torch.bfloat16)}


def make_input(seed: int, device: str) -> torch.Tensor:
    """This step's queries [BATCH, HEADS, DIM], bf16: head h reads key head h // GROUP."""
    g = torch.Generator(device=device).manual_seed(_INPUT_STREAM + seed)
    return torch.randn(BATCH, HEADS, DIM, generator=g, device=device).to(torch.bfloat16)


def least_work(l2_bytes: int) -> dict:
    """The least one forward() must do on any GPU (tutor.grading.floor): read every key once and write every
    score once."""
    keys, scores = BATCH * KV_HEADS * SEQ * DIM * 2, BATCH * HEADS * SEQ * 4
    return {"hbm_bytes": max(0, keys + scores - l2_bytes), "what": "every cached key read once, every score written once"}
