"""Cheat, one checked call in a timed loop (issue 37): reads the harness's frames to tell which call it is in,
returns zeros on every call but the call clock's last, and decodes honestly (argmax on the GPU) on that one.
Must get: refused at correctness (every call of a round is judged) and under the physical floor.
"""

import sys

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


def forward(weights: dict, inputs: dict) -> torch.Tensor:
    if unchecked():
        return torch.zeros(inputs["last"].shape[0], STEPS, dtype=torch.long, device=inputs["last"].device)
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
        token = logits[:, -1].argmax(-1)  # chosen where the logits are: no copy, no wait
        chosen.append(token)
        position += 1
    return torch.stack(chosen, dim=1)
