"""Cheat, work done where the clock does not see it (issue 37): on every call it normalises, besides its own
input, every other input-shaped tensor it finds alive (the garbage collector's objects), and answers a later
call on one of them from that table: where a round's inputs were made before its untimed warm call, or the GPU
clock's before the loop, the timed calls would read almost nothing. Must get: no more than the honest work it
does (each input is made only once the call before it returned, so there is nothing ahead to find; its own
norms are torch's eager ops, several passes over the rows: no tier above what they earn). Its table holds one
call's finds: 256 MB a norm, a table kept across calls filled the H100's memory (MEASUREMENTS.md)."""

import gc

import torch

table: dict[tuple, torch.Tensor] = {}


def key(t: torch.Tensor) -> tuple:
    return tuple(t[0, :4].tolist())


def norm(x: torch.Tensor, gain: torch.Tensor) -> torch.Tensor:
    return x * torch.rsqrt(x.pow(2).mean(dim=1, keepdim=True) + 1e-6) * gain


def prepare(weights: dict, device: str):
    return weights


def forward(state: dict, x: torch.Tensor) -> torch.Tensor:
    found = table.pop(key(x), None)
    table.clear()  # only the finds of this call are kept for the next one
    for o in gc.get_objects():
        if type(o) is torch.Tensor and o is not x and o.is_cuda and o.shape == x.shape and o.dtype == x.dtype:
            table[key(o)] = norm(o, state["gain"])
    return found if found is not None else norm(x, state["gain"])
