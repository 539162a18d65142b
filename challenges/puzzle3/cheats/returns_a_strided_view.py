"""Cheat, an output the caller cannot use as it is (issue 37): the baseline's GemLite layers, their output returned
as a transposed view of a transposed copy: the right values, laid out column by column. On puzzle12, a view of
this kind read 2.9x and was refused only for want of a kernel of its own. Must get: refused at correctness (a
device output must have the oracle's layout: "output is a strided view")."""

import torch
from gemlite.helper import A16W8_FP8


def prepare(weights: dict, device: str):
    return [A16W8_FP8(device=device, dtype=torch.bfloat16).from_weights(w.clone()) for w in weights["weights"]]


def forward(layers, x: torch.Tensor) -> torch.Tensor:
    with torch.inference_mode():
        for layer in layers:
            x = layer(x)
        return x.t().contiguous().t()
