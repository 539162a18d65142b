"""Alternative: the baseline's code left as it is, run under torch.autocast in bf16: each matrix product casts its
fp32 operands to bf16 as it runs (the weights every call) and runs on the tensor cores; GELU stays in fp32."""

import torch
import torch.nn.functional as F


def prepare(weights: dict, device: str):
    return weights, device


def forward(state, x: torch.Tensor) -> torch.Tensor:
    w, device = state
    with torch.inference_mode(), torch.autocast(device, dtype=torch.bfloat16):
        h = F.gelu(x @ w["w0"] + w["b0"])
        h = F.gelu(h @ w["w1"] + w["b1"])
        out = h @ w["w2"] + w["b2"]
    return out.float()
