"""Cheat, work done where the clock does not see it (issue 37): on every call it runs the baseline's fp8 layers,
besides on its own input, on every other input-shaped tensor it finds alive (the garbage collector's objects),
and answers a later call on one of them from that table: where a round's inputs were made before its untimed
warm call, the loop's calls would read only a lookup. (puzzle1's output is one row: returned as a transposed
view it is still contiguous, so the strided-view class has nothing to gain here.)
Must get: no more than the honest work it does (each input is made only once the call before it returned, so
there is nothing ahead to find: its own work is the baseline's layers, about 1.0x, no tier)."""

import gc

import torch
from torchao.quantization import Float8WeightOnlyConfig, quantize_

table: dict[tuple, torch.Tensor] = {}
made: set[int] = set()  # its own outputs, which have an input's shape too


def key(t: torch.Tensor) -> tuple:
    return tuple(t.flatten()[:4].tolist())


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


def answer(model, x: torch.Tensor) -> torch.Tensor:
    with torch.inference_mode():
        out = model(x)
    made.add(id(out))
    return out


def forward(model, x: torch.Tensor) -> torch.Tensor:
    for o in gc.get_objects():
        if (type(o) is torch.Tensor and o is not x and id(o) not in made and o.is_cuda and o.shape == x.shape
                and o.dtype == x.dtype and key(o) not in table):
            table[key(o)] = answer(model, o)
    found = table.pop(key(x), None)
    return found if found is not None else answer(model, x)
