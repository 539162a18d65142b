"""Cheat, though an honest-looking one: blocks rounded up to a few sizes. The allocator rounds every request to one of
DIVISIONS sizes between two powers of two, so the blocks a prompt frees come in the sizes the next prompt asks for
and a cached block serves it, with no torch.cuda.empty_cache(). But each block may be up to 1/DIVISIONS larger than
asked and the segments stay cached: its reserve tracked the baseline without empty_cache()'s at 8, 16 and 32 prompts
a call (1.25x, 1.47x, 1.28x the baseline's in the H100's sweep; 1.05-1.07x in the H200's grades, with the harness's
inputs set aside), so no budget refuses that one and passes this. Must get: refused by the memory budget
(graders/puzzle23.py), however fast.
"""

import torch
import torch.nn.functional as F
from torch.nn.attention import SDPBackend, sdpa_kernel

HIDDEN, FFN, LAYERS, HEADS, KV_HEADS = 2048, 8192, 2, 32, 8
HEAD = HIDDEN // HEADS
KV = KV_HEADS * HEAD
# One attention kernel for prompts of every length (the CPU's where there is no GPU): cuDNN's, SDPA's first choice
# on this GPU, plans anew for every prompt length it has not seen.
ATTENTION = [SDPBackend.FLASH_ATTENTION, SDPBackend.MATH]
DIVISIONS = 16  # sizes between two powers of two: a block at most 1/16 larger than asked


def layer(w: dict, n: int, x: torch.Tensor, cache: torch.Tensor | None) -> tuple[torch.Tensor, torch.Tensor]:
    """Layer n over x [tokens, HIDDEN]; keys and values appended to cache [2, past, KV]. Returns x and the cache."""
    tokens = x.shape[0]
    q, k, v = (x @ w[f"{n}.qkv"]).split([HIDDEN, KV, KV], dim=-1)
    kv = torch.stack([k, v]) if cache is None else torch.cat([cache, torch.stack([k, v])], dim=1)
    past = kv.shape[1] - tokens
    # [1, heads, tokens, HEAD]: the fused attention kernels take a batch dimension; without one SDPA falls back to
    # its reference path, which writes every head's tokens x tokens scores to memory.
    q = q.view(1, tokens, HEADS, HEAD).transpose(1, 2)
    k, v = (t.view(1, -1, KV_HEADS, HEAD).transpose(1, 2) for t in (kv[0], kv[1]))
    # Causal over the prompt; a decode token (past > 0) sees every key before it.
    with sdpa_kernel(ATTENTION):
        attn = F.scaled_dot_product_attention(q, k, v, is_causal=past == 0, enable_gqa=True)
    x = x + attn.transpose(1, 2).reshape(tokens, HIDDEN) @ w[f"{n}.o"]
    gate, up = (x @ w[f"{n}.up"]).chunk(2, dim=-1)
    return x + (F.silu(gate) * up) @ w[f"{n}.down"], kv


def prepare(weights: dict, device: str):
    if device == "cuda":
        torch.cuda.memory._set_allocator_settings(f"roundup_power2_divisions:{DIVISIONS}")
    return {"w": weights}


def forward(state: dict, prompts: list) -> torch.Tensor:
    w, caches, last = state["w"], [], []
    with torch.inference_mode():
        for x in prompts:
            kept = []
            for n in range(LAYERS):
                x, kv = layer(w, n, x, None)
                kept.append(kv)
            caches.append(kept)
            last.append(x[-1:])
            del x
        out = []
        for token, kept in zip(last, caches):  # one decode step a prompt, over its own cache
            for n in range(LAYERS):
                token, _ = layer(w, n, token, kept[n])
            out.append(token.float())
        return torch.cat(out)
