"""Alternative: the same fp32 tower, its matrix products allowed to run on the tensor cores in TF32 (inputs rounded
to a 10-bit mantissa, products summed in fp32). Set in prepare(): the setting is this process's alone. TF32 runs
at half bf16's rate on the tensor cores and reads fp32 operands, twice the bytes."""

import torch
import torch.nn.functional as F


def prepare(weights: dict, device: str):
    torch.backends.cuda.matmul.allow_tf32 = True
    return weights


def forward(w: dict, x: torch.Tensor) -> torch.Tensor:
    with torch.inference_mode():
        h = F.gelu(x @ w["w0"] + w["b0"])
        h = F.gelu(h @ w["w1"] + w["b1"])
        return h @ w["w2"] + w["b2"]
