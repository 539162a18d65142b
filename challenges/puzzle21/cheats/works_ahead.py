"""Cheat, work done where the clock does not see it (issue 37): on every call it projects, besides its own input,
every other input-shaped tensor it finds alive (the garbage collector's objects), and answers a later call on one
of them from that table: where a round's inputs were made before its untimed warm call, or the GPU clock's before
the loop, the timed calls would read almost nothing. Must get: no more than the honest work it does (each input is
made only once the call before it returned, so there is nothing ahead to find; its own projections are torch's
matmul: no tier above what that earns). Its table holds one call's finds."""

import gc

import torch

table: dict[tuple, torch.Tensor] = {}


def key(t: torch.Tensor) -> tuple:
    return tuple(t[0, :4].tolist())


def prepare(weights: dict, device: str):
    return weights


def forward(state: dict, x: torch.Tensor) -> torch.Tensor:
    found = table.pop(key(x), None)
    table.clear()  # only the finds of this call are kept for the next one
    for o in gc.get_objects():
        if type(o) is torch.Tensor and o is not x and o.is_cuda and o.shape == x.shape and o.dtype == x.dtype:
            table[key(o)] = o @ state["w"]
    return found if found is not None else x @ state["w"]
