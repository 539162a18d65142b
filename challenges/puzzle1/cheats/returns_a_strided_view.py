"""Cheat, an output the caller cannot use as it is (issue 37): the baseline's fp8 layers, their output returned as
a transposed view of a transposed copy: the right values, laid out column by column (strides (1, rows)). On
puzzle12, a view of this kind read 2.9x and was refused only for want of a kernel of its own. Must get: refused
at correctness (a device output must have the oracle's layout: "output is a strided view")."""

import torch
from torchao.quantization import Float8WeightOnlyConfig, quantize_


def prepare(weights: dict, device: str):
    layers = []
    for w in weights["weights"]:
        out_features, in_features = w.shape
        layer = torch.nn.Linear(in_features, out_features, bias=False, dtype=torch.bfloat16, device=device)
        layer.weight.data.copy_(w)
        layers.append(layer)
    model = torch.nn.Sequential(*layers).eval()
    quantize_(model, Float8WeightOnlyConfig())
    return model


def forward(model, x: torch.Tensor) -> torch.Tensor:
    with torch.inference_mode():
        return model(x).t().contiguous().t()
