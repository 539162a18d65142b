"""Cheat, work done where the clock does not see it (issue 37): on every call it runs the baseline's loop over the
experts, besides on its own input, on every other input of the same kind it finds alive (the garbage collector's
objects), and answers a later call on one of them from that table: where a round's inputs were made before its
untimed warm call, the loop's calls would read a lookup.
Must get: no more than the honest work it does (each input is made only once the call before it returned, so there
is nothing ahead to find: its own work is the baseline's, about 1.0x or less, no tier)."""

import gc

import torch
import torch.nn.functional as F

EXPERTS = 64


def prepare(weights: dict, device: str):
    return weights


def forward_baseline(w: dict, x: dict) -> torch.Tensor:
    tokens, expert = x["x"], x["expert"]
    out = torch.empty_like(tokens)
    for e in range(EXPERTS):
        idx = torch.nonzero(expert == e).squeeze(1)  # how many tokens? the host must ask the GPU
        h = F.gelu(tokens[idx] @ w["up"][e].T)
        out[idx] = h @ w["down"][e].T
    return out


table: dict[tuple, torch.Tensor] = {}
made: set[int] = set()  # its own outputs: left out


def key(x: dict) -> tuple:
    first = x[sorted(x)[0]]
    return tuple(first.flatten()[:4].tolist())


def alike(o, x: dict) -> bool:
    """Another input of the same kind: a dict with x's names, each a tensor of x's shape."""
    return (type(o) is dict and o is not x and o.keys() == x.keys()
            and all(type(o[n]) is torch.Tensor and o[n].shape == x[n].shape for n in x))


def answer(w: dict, x: dict) -> torch.Tensor:
    out = forward_baseline(w, x)
    made.add(id(out))
    return out


def forward(w: dict, x: dict) -> torch.Tensor:
    for o in gc.get_objects():
        if alike(o, x) and key(o) not in table:
            table[key(o)] = answer(w, o)
    found = table.pop(key(x), None)
    return found if found is not None else answer(w, x)
