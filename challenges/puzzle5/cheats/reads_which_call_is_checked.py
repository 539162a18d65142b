"""Cheat, one checked call in a timed loop (issue 37): reads the harness's frames to tell which call it is in (the
warm call before the call clock starts, a call of the loop that is not its last) and returns zeros there, the
baseline's decode everywhere else. On a grade that checked the loop's last call alone, a cheat of this class read
gold at 3.37x, above the reference's 2.61x. Must get: refused at correctness (every call of a round is checked)."""

import sys

import torch
import torch.nn.functional as F

STEPS, HEADS = 32, 8


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


def attend(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor) -> torch.Tensor:
    b, t, d = k.shape
    heads = lambda x: x.view(b, -1, HEADS, d // HEADS).transpose(1, 2)  # noqa: E731
    return F.scaled_dot_product_attention(heads(q[:, None]), heads(k), heads(v)).transpose(1, 2).reshape(b, d)


def forward(w: dict, x: dict) -> torch.Tensor:
    h, k, v = x["h"], x["k"], x["v"]
    if unchecked():
        return torch.zeros(h.shape[0], STEPS, h.shape[1], dtype=h.dtype, device=h.device)
    outs = []
    for _ in range(STEPS):
        k = torch.cat([k, (h @ w["wk"].T)[:, None]], dim=1)
        v = torch.cat([v, (h @ w["wv"].T)[:, None]], dim=1)
        h = F.layer_norm(h + attend(h @ w["wq"].T, k, v) @ w["wo"].T, h.shape[-1:])
        outs.append(h)
    return torch.stack(outs, dim=1)
