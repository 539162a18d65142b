"""The team's decode loop: a Llama-style model written out as its reference implementation reads, one token a step
for every sequence, greedy."""

import torch
import torch.nn.functional as F

STEPS = 16
ROPE_THETA, NORM_EPS = 500000.0, 1e-5


def prepare(weights: dict, device: str):
    return weights


def rms_norm(x, weight):
    variance = x.float().pow(2).mean(-1, keepdim=True)
    return (x.float() * torch.rsqrt(variance + NORM_EPS)).to(x.dtype) * weight


def rotate_half(x):
    half = x.shape[-1] // 2
    return torch.cat([-x[..., half:], x[..., :half]], dim=-1)


def rope(x, position):
    head_dim = x.shape[-1]
    inv_freq = 1.0 / (ROPE_THETA ** (torch.arange(0, head_dim, 2, device=x.device).float() / head_dim))
    angles = position * inv_freq
    angles = torch.cat([angles, angles], dim=-1)
    return (x.float() * angles.cos() + rotate_half(x).float() * angles.sin()).to(x.dtype)


def layer(w, x, cache, position):
    batch, kv_heads, _, head_dim = cache["k"].shape
    heads = w["wq"].shape[1] // head_dim
    h = rms_norm(x, w["attn_norm"])
    q = rope((h @ w["wq"]).view(batch, 1, heads, head_dim).transpose(1, 2), position)
    k = rope((h @ w["wk"]).view(batch, 1, kv_heads, head_dim).transpose(1, 2), position)
    v = (h @ w["wv"]).view(batch, 1, kv_heads, head_dim).transpose(1, 2)
    cache["k"] = torch.cat([cache["k"], k], dim=2)  # the cache grows by one token a step
    cache["v"] = torch.cat([cache["v"], v], dim=2)
    att = F.scaled_dot_product_attention(q, cache["k"], cache["v"], enable_gqa=True)
    x = x + att.transpose(1, 2).reshape(batch, 1, heads * head_dim) @ w["wo"]
    h = rms_norm(x, w["mlp_norm"])
    return x + (F.silu(h @ w["w_gate"]) * (h @ w["w_up"])) @ w["w_down"]


def forward(weights: dict, inputs: dict) -> torch.Tensor:
    caches = [{"k": k, "v": v} for k, v in zip(inputs["k"], inputs["v"])]
    position = inputs["k"].shape[3]
    token = inputs["last"]
    chosen = []
    for _ in range(STEPS):
        x = weights["embed"][token][:, None]
        for w, cache in zip(weights["layers"], caches):
            x = layer(w, x, cache, position)
        # The output layer in fp32, for accurate logits.
        logits = rms_norm(x, weights["norm"]).float() @ weights["embed"].float().T
        # Sampling on the host, where the serving stack's samplers live.
        token = logits[:, -1].cpu().argmax(-1).to(x.device)
        chosen.append(token)
        position += 1
    return torch.stack(chosen, dim=1)
