"""Cheat, one checked call in a timed loop (issue 37): reads the harness's frames to tell which call it is in and,
on both ranks alike, returns zeros on every call but the call clock's last (the warm call, the loop's others),
the pipeline's work on that one. Where only that last call were checked, the clock would time an allocation and
read a speed-up far above gold. Must get: refused at correctness (every call of a round is checked, on every
rank), and under the physical floor.
"""

import sys

import torch
import torch.distributed as dist
import torch.nn.functional as F


def prepare(weights: dict, device: str):
    return weights["layers"]


def unchecked() -> bool:
    """Whether the harness frames above say this is the warm call, the GPU clock's, or a loop call before its last."""
    frame = sys._getframe(2)
    while frame is not None:
        names = frame.f_locals
        if frame.f_code.co_name in ("warm_call", "time_call_ms"):
            return True
        seeds = names.get("seeds")  # the call clock's loop: the seeds of its calls, and the one being called
        if isinstance(seeds, list) and seeds and "seed" in names and names["seed"] != seeds[-1]:
            return True
        frame = frame.f_back
    return False


def forward(layers: list, x: torch.Tensor) -> torch.Tensor:
    if unchecked():
        return torch.zeros_like(x)
    h = x if dist.get_rank() == 0 else torch.empty_like(x)
    if dist.get_rank() == 1:
        dist.recv(h, 0)
    for w in layers:
        h = h + F.gelu(h @ w["w1"]) @ w["w2"]
    if dist.get_rank() == 0:
        dist.send(h, 1)
        dist.recv(h, 1)
    else:
        dist.send(h, 0)
    return h
