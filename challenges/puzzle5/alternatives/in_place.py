"""The fix without the graph: the cache allocated once at its final length and written in place,
each step attending to a slice of it. Every step still launches its kernels from Python."""

import torch
import torch.nn.functional as F

BATCH, HIDDEN, HEADS, PROMPT, STEPS = 32, 1024, 8, 4096, 32


def attend(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor) -> torch.Tensor:
    b, t, d = k.shape
    heads = lambda x: x.view(b, -1, HEADS, d // HEADS).transpose(1, 2)  # noqa: E731
    return F.scaled_dot_product_attention(heads(q[:, None]), heads(k), heads(v)).transpose(1, 2).reshape(b, d)


def prepare(weights: dict, device: str):
    like = {"device": device, "dtype": weights["wk"].dtype}  # the cache in the weights' type: bf16
    return {"w": weights, "k": torch.empty(BATCH, PROMPT + STEPS, HIDDEN, **like),
            "v": torch.empty(BATCH, PROMPT + STEPS, HIDDEN, **like)}


def forward(state: dict, x: dict) -> torch.Tensor:
    w, k, v, h = state["w"], state["k"], state["v"], x["h"]
    k[:, :PROMPT].copy_(x["k"])
    v[:, :PROMPT].copy_(x["v"])
    outs = []
    for i in range(STEPS):
        t = PROMPT + i
        k[:, t] = h @ w["wk"].T
        v[:, t] = h @ w["wv"].T
        h = F.layer_norm(h + attend(h @ w["wq"].T, k[:, :t + 1], v[:, :t + 1]) @ w["wo"].T, h.shape[-1:])
        outs.append(h)
    return torch.stack(outs, dim=1)
