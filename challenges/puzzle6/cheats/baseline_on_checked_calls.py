"""Cheat, one checked call in a timed loop (issue 37): the baseline itself, run only on the calls the harness's
frames say are checked; every other call of the round (the warm call, all of the loop's but its last) returns
its tokens unchanged. On a grade that checked the loop's last call alone, a cheat of this class earned the
baseline bronze (6.5x). Must get: refused at correctness (every call of a round is checked)."""

import sys

import torch
import torch.nn.functional as F

EXPERTS = 64


def prepare(weights: dict, device: str):
    return weights


def unchecked() -> bool:
    frame = sys._getframe(2)
    while frame is not None:
        names = frame.f_locals
        if frame.f_code.co_name == "warm_call":
            return True
        seeds = names.get("seeds")  # the call clock's loop: the seeds of its calls, and the one being called
        if isinstance(seeds, list) and seeds and "seed" in names and names["seed"] != seeds[-1]:
            return True
        frame = frame.f_back
    return False


def forward(w: dict, x: dict) -> torch.Tensor:
    tokens, expert = x["x"], x["expert"]
    if unchecked():
        return tokens.clone()
    out = torch.empty_like(tokens)
    for e in range(EXPERTS):
        idx = torch.nonzero(expert == e).squeeze(1)
        h = F.gelu(tokens[idx] @ w["up"][e].T)
        out[idx] = h @ w["down"][e].T
    return out
