"""Cheat, an output the caller cannot use as it is (issue 37): the stack run eagerly, its rows returned as a
transposed view of a transposed copy: the right values, laid out column by column. On puzzle12, a view of this
kind read 2.9x and was refused only for want of a kernel of its own. Must get: refused at correctness (a device
output must have the oracle's layout: "output is a strided view")."""

import torch
import torch.nn.functional as F


def prepare(weights: dict, device: str):
    return weights["layers"]


def forward(layers, xs: list[torch.Tensor]) -> torch.Tensor:
    rows = torch.cat(xs)
    with torch.inference_mode():
        for w1, w2 in layers:
            h = F.layer_norm(rows, rows.shape[-1:])
            rows = rows + F.linear(F.gelu(F.linear(h, w1)), w2)
        return rows.t().contiguous().t()
