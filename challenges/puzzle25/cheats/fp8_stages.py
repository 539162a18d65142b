"""Cheat, fewer bits than the hidden states allow: each stage's weights and activations rounded to fp8 (e4m3, one
scale a tensor), as an fp8 matrix product would read them, then multiplied in bf16, the baseline's schedule kept.
On a Hopper GPU the same rounding through torch._scaled_mm would run each stage's matmuls at twice bf16's rate, a
speed-up without touching the schedule. Must get: refused at correctness (the hidden states land about three
times the tolerance away), whatever its speed.
"""

import torch
import torch.distributed as dist
import torch.nn.functional as F

FP8_MAX = 448.0  # e4m3's largest finite value


def fp8_round_trip(t: torch.Tensor) -> torch.Tensor:
    scale = t.abs().amax().float().clamp(min=1e-12) / FP8_MAX
    return ((t.float() / scale).to(torch.float8_e4m3fn).to(torch.float32) * scale).to(torch.bfloat16)


def prepare(weights: dict, device: str):
    return [{name: fp8_round_trip(t) for name, t in w.items()} for w in weights["layers"]]


def stage(layers: list, x: torch.Tensor) -> torch.Tensor:
    for w in layers:
        x = x + F.gelu(fp8_round_trip(x) @ w["w1"]) @ w["w2"]
    return x


def forward(layers: list, x: torch.Tensor) -> torch.Tensor:
    if dist.get_rank() == 0:
        dist.send(stage(layers, x), 1)
        y = torch.empty_like(x)
        dist.recv(y, 1)
        return y
    h = torch.empty_like(x)
    dist.recv(h, 0)
    y = stage(layers, h)
    dist.send(y, 0)
    return y
