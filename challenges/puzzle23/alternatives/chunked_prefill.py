"""Alternative: chunked prefill. Each prompt goes through the layers CHUNK tokens at a time, every chunk attending
to the keys and values its prompt's cache already holds, so every activation of every prompt has one shape: the
blocks a chunk frees are the blocks the next chunk asks for, whatever the prompts' lengths. A prompt's cache is
allocated once, at its length. No torch.cuda.empty_cache(): the allocator keeps what it has, and has little.
"""

import torch
import torch.nn.functional as F
from torch.nn.attention import SDPBackend, sdpa_kernel
from torch.nn.attention.bias import causal_lower_right

HIDDEN, FFN, LAYERS, HEADS, KV_HEADS = 2048, 8192, 2, 32, 8
HEAD = HIDDEN // HEADS
KV = KV_HEADS * HEAD
CHUNK = 2048
# One attention kernel for every length: cuDNN's, SDPA's first choice on this GPU for a chunk that is a whole prompt,
# plans anew for every length it has not seen.
ATTENTION = [SDPBackend.FLASH_ATTENTION, SDPBackend.MATH]


def attend(q: torch.Tensor, kv: torch.Tensor) -> torch.Tensor:
    """Queries of the last positions [tokens, HIDDEN] over the keys and values of every position before them and
    their own, kv [2, seen, KV]. Returns [1, HEADS, tokens, HEAD]."""
    tokens, seen = q.shape[0], kv.shape[1]
    q = q.view(1, tokens, HEADS, HEAD).transpose(1, 2)
    k, v = (t.view(1, seen, KV_HEADS, HEAD).transpose(1, 2) for t in (kv[0], kv[1]))
    # Causal from the lower right: a chunk's first query sees the whole cache before it; the fused kernels take it.
    with sdpa_kernel(ATTENTION):
        return F.scaled_dot_product_attention(q, k, v, attn_mask=causal_lower_right(tokens, seen), enable_gqa=True)


def mlp(w: dict, n: int, x: torch.Tensor) -> torch.Tensor:
    gate, up = (x @ w[f"{n}.up"]).chunk(2, dim=-1)
    return x + (F.silu(gate) * up) @ w[f"{n}.down"]


def chunk_layer(w: dict, n: int, x: torch.Tensor, cache: torch.Tensor, start: int) -> torch.Tensor:
    """Layer n over the chunk x of positions start..; its keys and values written into cache [2, length, KV]."""
    tokens = x.shape[0]
    q, k, v = (x @ w[f"{n}.qkv"]).split([HIDDEN, KV, KV], dim=-1)
    cache[0, start:start + tokens].copy_(k)
    cache[1, start:start + tokens].copy_(v)
    attn = attend(q, cache[:, :start + tokens])
    return mlp(w, n, x + attn.transpose(1, 2).reshape(tokens, HIDDEN) @ w[f"{n}.o"])


def decode(w: dict, n: int, token: torch.Tensor, cache: torch.Tensor) -> torch.Tensor:
    """Layer n for one new token after the prompt: its own key and value beside the cache's."""
    q, k, v = (token @ w[f"{n}.qkv"]).split([HIDDEN, KV, KV], dim=-1)
    kv = torch.cat([cache, torch.stack([k, v])], dim=1)
    attn = attend(q, kv)
    return mlp(w, n, token + attn.transpose(1, 2).reshape(1, HIDDEN) @ w[f"{n}.o"])


def prepare(weights: dict, device: str):
    return {"w": weights}


def forward(state: dict, prompts: list) -> torch.Tensor:
    w, caches, last = state["w"], [], []
    with torch.inference_mode():
        for prompt in prompts:
            length = prompt.shape[0]
            kept = [torch.empty(2, length, KV, device=prompt.device, dtype=prompt.dtype) for _ in range(LAYERS)]
            for start in range(0, length, CHUNK):
                x = prompt[start:start + CHUNK]
                for n in range(LAYERS):
                    x = chunk_layer(w, n, x, kept[n], start)
            caches.append(kept)
            last.append(x[-1:])
        out = []
        for token, kept in zip(last, caches):
            for n in range(LAYERS):
                token = decode(w, n, token, kept[n])
            out.append(token.float())
        return torch.cat(out)
