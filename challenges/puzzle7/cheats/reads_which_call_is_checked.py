"""Cheat, one checked call in a timed loop (issue 37): reads the harness's frames to tell which call it is in (the warm
call before the call clock starts, a call of the loop that is not its last) and returns host zeros there, the
baseline's embeddings everywhere else. Where only the loop's last call were checked, the call clock would read a
fraction of the baseline's time.
Must get: refused at correctness (every call of a round is checked, the warm call too)."""

import sys

import torch
import torch.nn.functional as F


def prepare(weights: dict, device: str):
    return weights


def embed(w: dict, x: torch.Tensor) -> torch.Tensor:
    """A projection head: two fp32 matmuls, a GELU between them, each row scaled to unit length."""
    return F.normalize(F.gelu(x @ w["w1"]) @ w["w2"], dim=-1)


def forward_baseline(w: dict, x: torch.Tensor) -> torch.Tensor:
    out = torch.empty(x.shape[0], x.shape[1], w["w2"].shape[1])  # ordinary (pageable) host memory
    for i, batch in enumerate(x):
        # A copy into pageable memory: the driver stages it through a small pinned buffer of its own, piece by
        # piece, and the host waits for all of it before it launches the next batch's matmuls.
        out[i] = embed(w, batch)
    return out


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


def forward(w: dict, x: torch.Tensor) -> torch.Tensor:
    if unchecked():
        return torch.zeros(x.shape[0], x.shape[1], w["w2"].shape[1])
    return forward_baseline(w, x)
