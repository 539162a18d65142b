"""Cheat, one checked call in a timed loop (issue 37): reads the harness's frames to tell which call it is in and
returns zeros on every call but the call clock's last (the warm call, the loop's others, and the GPU clock's call),
the reference's work on that one. Where only that last call were checked, the clock would time an allocation and
read a speed-up far above gold. Must get: refused at correctness (every call of a round is checked), and under the
physical floor.
"""

import sys

import torch
import torch.nn.functional as F
from torch.nn.attention import SDPBackend, sdpa_kernel

HIDDEN, FFN, LAYERS, HEADS, KV_HEADS = 2048, 8192, 2, 32, 8
HEAD = HIDDEN // HEADS
KV = KV_HEADS * HEAD
# One attention kernel for prompts of every length (the CPU's where there is no GPU): cuDNN's, SDPA's first choice
# on this GPU, plans anew for every prompt length it has not seen.
ATTENTION = [SDPBackend.FLASH_ATTENTION, SDPBackend.MATH]


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
        # Segments that grow in place: a freed range is mapped again for a block of any size, so blocks of every
        # prompt's sizes no longer each keep a segment of their own reserved.
        torch.cuda.memory._set_allocator_settings("expandable_segments:True")
    return {"w": weights}


def unchecked() -> bool:
    """Whether the harness frames above say this is the warm call, the GPU clock's, or a loop call before its last."""
    frame = sys._getframe(2)
    while frame is not None:
        names = frame.f_locals
        if frame.f_code.co_name in ("warm_call", "time_call_ms"):
            return True
        seeds = names.get("seeds")  # the call clock's loop: the seeds of its calls, and the one being called
        if isinstance(seeds, list) and seeds and "seed" in names and names["seed"] != seeds[-1]:
            return True
        frame = frame.f_back
    return False


def forward(state: dict, prompts: list) -> torch.Tensor:
    if unchecked():
        return torch.zeros(len(prompts), HIDDEN, device=prompts[0].device)
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
