"""Alternative: the large activations in buffers of their own, made once. Each layer writes its projections, its
MLP's activations and its output into slices of buffers sized for the longest prompt seen so far, so a prompt of
any length asks the allocator for none of them: what is left to it (each prompt's cache, attention's output) is
small, and no torch.cuda.empty_cache() is needed to keep what it reserves near what the tensors use.
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
ROWS = 1024  # buffers grow in steps of this many tokens, so a few prompts size them for good


def workspace(state: dict, tokens: int, like: torch.Tensor) -> dict:
    """The buffers, at least `tokens` rows each: grown (and the old ones freed) only for a longer prompt."""
    space = state["space"]
    if space.get("rows", 0) < tokens:
        rows = -(-tokens // ROWS) * ROWS
        widths = {"qkv": HIDDEN + 2 * KV, "h": HIDDEN, "up": 2 * FFN, "act": FFN, "x0": HIDDEN, "x1": HIDDEN}
        space.clear()
        space.update({name: like.new_empty(rows, width) for name, width in widths.items()}, rows=rows)
    return space


def layer(w: dict, n: int, x: torch.Tensor, space: dict) -> tuple[torch.Tensor, torch.Tensor]:
    """Layer n over a prompt x [tokens, HIDDEN], written into the workspace. Returns its output (a slice of a
    buffer the next layer but one overwrites) and the prompt's keys and values [2, tokens, KV]."""
    tokens = x.shape[0]
    qkv = torch.matmul(x, w[f"{n}.qkv"], out=space["qkv"][:tokens])
    q, k, v = qkv.split([HIDDEN, KV, KV], dim=-1)
    kv = torch.stack([k, v])
    attn = attend(q, kv[0], kv[1], causal=True)
    h = torch.addmm(x, attn, w[f"{n}.o"], out=space["h"][:tokens])
    gate, up = torch.matmul(h, w[f"{n}.up"], out=space["up"][:tokens]).chunk(2, dim=-1)
    act = space["act"][:tokens]
    act.copy_(gate)
    F.silu(act, inplace=True)
    act.mul_(up)
    return torch.addmm(h, act, w[f"{n}.down"], out=space[f"x{n % 2}"][:tokens]), kv


def attend(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, causal: bool) -> torch.Tensor:
    """Queries [tokens, HIDDEN] over keys and values [seen, KV]; [tokens, HIDDEN] out."""
    tokens = q.shape[0]
    q = q.reshape(1, tokens, HEADS, HEAD).transpose(1, 2)
    k, v = (t.reshape(1, -1, KV_HEADS, HEAD).transpose(1, 2) for t in (k, v))
    with sdpa_kernel(ATTENTION):
        attn = F.scaled_dot_product_attention(q, k, v, is_causal=causal, enable_gqa=True)
    return attn.transpose(1, 2).reshape(tokens, HIDDEN)


def decode(w: dict, n: int, token: torch.Tensor, cache: torch.Tensor) -> torch.Tensor:
    """Layer n for one new token after the prompt, over the prompt's cache and its own key and value."""
    q, k, v = (token @ w[f"{n}.qkv"]).split([HIDDEN, KV, KV], dim=-1)
    kv = torch.cat([cache, torch.stack([k, v])], dim=1)
    h = token + attend(q, kv[0], kv[1], causal=False) @ w[f"{n}.o"]
    gate, up = (h @ w[f"{n}.up"]).chunk(2, dim=-1)
    return h + (F.silu(gate) * up) @ w[f"{n}.down"]


def prepare(weights: dict, device: str):
    return {"w": weights, "space": {}}


def forward(state: dict, prompts: list) -> torch.Tensor:
    w, caches, last = state["w"], [], []
    with torch.inference_mode():
        for x in prompts:
            space = workspace(state, x.shape[0], x)
            kept = []
            for n in range(LAYERS):
                x, kv = layer(w, n, x, space)
                kept.append(kv)
            caches.append(kept)
            last.append(x[-1:].clone())  # the buffer is the next prompt's
        out = []
        for token, kept in zip(last, caches):  # one decode step a prompt, over its own cache
            for n in range(LAYERS):
                token = decode(w, n, token, kept[n])
            out.append(token.float())
        return torch.cat(out)
