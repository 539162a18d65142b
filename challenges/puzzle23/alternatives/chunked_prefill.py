"""Alternative: chunked prefill, every chunk CHUNK tokens. Each prompt goes through the layers a chunk at a time,
its last chunk padded with zeros to CHUNK (a padded token comes after every real one: causal attention keeps it out
of their results), every chunk attending to the keys and values its prompt's cache already holds. Every activation
of every prompt has one shape, and a prompt's cache is a whole number of chunks: the blocks a chunk frees are the
blocks the next chunk asks for, whatever the prompts' lengths. No torch.cuda.empty_cache().
"""


import torch
import torch.nn.functional as F
from torch.nn.attention import SDPBackend, sdpa_kernel
from torch.nn.attention.bias import causal_lower_right

HIDDEN, FFN, LAYERS, HEADS, KV_HEADS = 2048, 8192, 2, 32, 8
HEAD = HIDDEN // HEADS
KV = KV_HEADS * HEAD
# A fixed chunk of 1024 tokens: 1.28-1.29x the baseline on an H100, between-grade spread 0.6%; chunks of up to 2048
# with the last one left short read 1.06-1.40x (MEASUREMENTS.md); 512 padded, twice the launches, 0.94x.
CHUNK = 1024
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
            chunks = -(-length // CHUNK)
            kept = [torch.empty(2, chunks * CHUNK, KV, device=prompt.device, dtype=prompt.dtype)
                    for _ in range(LAYERS)]
            for start in range(0, length, CHUNK):
                x = prompt[start:start + CHUNK]
                real = x.shape[0]
                if real < CHUNK:
                    x = torch.cat([x, x.new_zeros(CHUNK - real, HIDDEN)])
                for n in range(LAYERS):
                    x = chunk_layer(w, n, x, kept[n], start)
            caches.append([kv[:, :length] for kv in kept])
            last.append(x[real - 1:real])
        out = []
        for token, kept in zip(last, caches):
            for n in range(LAYERS):
                token = decode(w, n, token, kept[n])
            out.append(token.float())
        return torch.cat(out)
