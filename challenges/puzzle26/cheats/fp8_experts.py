"""Cheat, fewer bits than the output allows: the experts' weights and each call's tokens rounded to fp8 (e4m3, one
scale a tensor), as an fp8 matrix product would read them, then multiplied in bf16, placement left as it is. On a
Hopper GPU the same rounding through torch._scaled_mm would run the busy GPU's matmuls at twice bf16's rate, a
speed-up without touching the imbalance. Must get: refused at correctness (the layer's output lands several times
the tolerance away: the residual is the caller's, so no larger term hides the error), whatever its speed.
"""

import torch
import torch.distributed as dist
import torch.nn.functional as F

FP8_MAX = 448.0  # e4m3's largest finite value


def fp8_round_trip(t: torch.Tensor) -> torch.Tensor:
    scale = t.abs().amax().clamp(min=1e-12) / FP8_MAX
    return ((t.float() / scale).to(torch.float8_e4m3fn).to(torch.float32) * scale).to(torch.bfloat16)


def prepare(weights: dict, device: str):
    experts = [{name: fp8_round_trip(t) for name, t in e.items()} for e in weights["experts"]]
    return {**weights, "experts": experts}


def forward(w: dict, x: torch.Tensor) -> torch.Tensor:
    logits = x.float() @ w["router"] + w["bias"]
    gate, choice = logits.softmax(dim=1).max(dim=1)
    out = torch.zeros_like(x)
    for n, expert in enumerate(w["experts"]):
        rows = (choice == w["first"] + n).nonzero().squeeze(1)
        h = F.gelu(fp8_round_trip(x[rows]) @ expert["w1"])
        out[rows] = (gate[rows, None] * (fp8_round_trip(h) @ expert["w2"])).to(x.dtype)
    dist.all_reduce(out)
    return out
