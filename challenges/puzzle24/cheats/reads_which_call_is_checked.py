"""Cheat, one checked call in a timed loop (issue 37): reads the harness's frames to tell which call it is in and
returns zeros on every call but the call clock's last (the warm call, the loop's others, and the GPU clock's call),
the reference's work on that one. Where only that last call were checked, the clock would time an allocation and
read a speed-up far above gold. Must get: refused at correctness (every call of a round is checked), and under the
physical floor.
"""

import sys

import torch
import torch.nn.functional as F


def prepare(weights: dict, device: str):
    if device == "cuda":
        torch.backends.cuda.matmul.allow_tf32 = True
    return weights


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


def forward(w: dict, x: torch.Tensor) -> torch.Tensor:
    if unchecked():
        return torch.zeros(x.shape[0], w["b2"].shape[0], device=x.device)
    with torch.inference_mode():
        h = F.gelu(x @ w["w0"] + w["b0"])
        h = F.gelu(h @ w["w1"] + w["b1"])
        return h @ w["w2"] + w["b2"]
