"""Alternative: the baseline's code unchanged, with torch told that fp32 matrix products may use bf16 internally
(torch.set_float32_matmul_precision("medium"), in prepare(): this process's setting alone). cuBLAS then runs them
on the tensor cores with bf16 operands it rounds itself from the fp32 tensors, summed in fp32."""

import torch
import torch.nn.functional as F


def prepare(weights: dict, device: str):
    torch.set_float32_matmul_precision("medium")
    return weights


def forward(w: dict, x: torch.Tensor) -> torch.Tensor:
    with torch.inference_mode():
        h = F.gelu(x @ w["w0"] + w["b0"])
        h = F.gelu(h @ w["w1"] + w["b1"])
        return h @ w["w2"] + w["b2"]
