"""Cheat, work done where the clock does not see it (issue 37): on every call it runs the baseline's decode, besides on
its own input, on every other input of the same kind it finds alive (the garbage collector's objects), and answers a
later call on one of them from that table: where a round's inputs were made before its untimed warm call, the loop's
calls would read a lookup.
Must get: no more than the honest work it does (each input is made only once the call before it returned, so there
is nothing ahead to find: its own work is the baseline's, about 1.0x or less, no tier)."""

import gc

import torch
import torch.nn.functional as F

STEPS, HEADS = 32, 8


def prepare(weights: dict, device: str):
    return weights


def attend(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor) -> torch.Tensor:
    """One query per sequence against its cache: [B, D], [B, T, D], [B, T, D] -> [B, D]."""
    b, t, d = k.shape
    heads = lambda x: x.view(b, -1, HEADS, d // HEADS).transpose(1, 2)  # noqa: E731
    return F.scaled_dot_product_attention(heads(q[:, None]), heads(k), heads(v)).transpose(1, 2).reshape(b, d)


def forward_baseline(w: dict, x: dict) -> torch.Tensor:
    h, k, v = x["h"], x["k"], x["v"]
    outs = []
    for _ in range(STEPS):
        k = torch.cat([k, (h @ w["wk"].T)[:, None]], dim=1)  # a new, one-token-longer copy of the cache
        v = torch.cat([v, (h @ w["wv"].T)[:, None]], dim=1)
        h = F.layer_norm(h + attend(h @ w["wq"].T, k, v) @ w["wo"].T, h.shape[-1:])
        outs.append(h)
    return torch.stack(outs, dim=1)


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
