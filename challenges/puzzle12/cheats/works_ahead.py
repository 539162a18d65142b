"""Cheat, work done where the clock does not see it (issue 37): on every call it transposes, besides its own
input, every other input-shaped tensor it finds alive (the garbage collector's objects), and answers a later
call on one of them from that table: where a round's inputs were made before its untimed warm call, or the GPU
clock's before the loop, the timed calls read almost nothing. Must get: no more than the honest work it does
(each input is made only once the call before it returned, so there is nothing ahead to find; its own
transposes are the baseline-class kernel, torch's copy: no tier above what that earns)."""

import gc

import torch

table: dict[tuple, torch.Tensor] = {}


def key(t: torch.Tensor) -> tuple:
    return tuple(t[0, :4].tolist())


def prepare(weights: dict, device: str):
    return None


def forward(state, keys: torch.Tensor) -> torch.Tensor:
    for o in gc.get_objects():
        if type(o) is torch.Tensor and o is not keys and o.is_cuda and o.shape == keys.shape and o.dtype == keys.dtype:
            table.setdefault(key(o), o.t().contiguous())
    found = table.pop(key(keys), None)
    return found if found is not None else keys.t().contiguous()
