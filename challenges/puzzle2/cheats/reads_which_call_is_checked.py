"""Cheat, one checked call in a timed loop (issue 37): reads the harness's frames to tell which call it is in (the
warm call before the call clock starts, a call of the loop that is not its last) and returns zeros there, the
stack run eagerly everywhere else. On puzzle5, a grade that checked the loop's last call alone read this class
gold. Must get: refused at correctness (every call of a round is checked, the warm call too)."""

import sys

import torch
import torch.nn.functional as F


def unchecked() -> bool:
    """Whether the harness frames above say this call is the warm call or a call of the loop before its last."""
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


def prepare(weights: dict, device: str):
    return weights["layers"]


def forward(layers, xs: list[torch.Tensor]) -> torch.Tensor:
    rows = torch.cat(xs)
    if unchecked():
        return torch.zeros_like(rows)
    with torch.inference_mode():
        for w1, w2 in layers:
            h = F.layer_norm(rows, rows.shape[-1:])
            rows = rows + F.linear(F.gelu(F.linear(h, w1)), w2)
        return rows
