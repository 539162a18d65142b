"""Cheat, fewer bits than the scores allow: weights and candidates rounded to fp8 (e4m3, one scale a tensor), as
an fp8 matrix product would read them, then multiplied in bf16. On the H100 the same rounding through
torch._scaled_mm would run at twice bf16's rate. Must get: refused at correctness (the scores land several times
the tolerance away), whatever its speed.
"""

import torch
import torch.nn.functional as F

FP8_MAX = 448.0  # e4m3's largest finite value


def fp8_round_trip(t: torch.Tensor) -> torch.Tensor:
    scale = t.abs().amax().clamp(min=1e-12) / FP8_MAX
    return ((t / scale).to(torch.float8_e4m3fn).to(torch.float32) * scale).to(torch.bfloat16)


def prepare(weights: dict, device: str):
    return {name: fp8_round_trip(t) if name.startswith("w") else t.to(torch.bfloat16) for name, t in weights.items()}


def forward(w: dict, x: torch.Tensor) -> torch.Tensor:
    with torch.inference_mode():
        h = F.gelu(torch.addmm(w["b0"], fp8_round_trip(x), w["w0"]))
        h = F.gelu(torch.addmm(w["b1"], fp8_round_trip(h), w["w1"]))
        return torch.addmm(w["b2"], fp8_round_trip(h), w["w2"]).float()
