"""Cheat, an output the caller cannot keep (issue 37): the reference's overlapped copies, into two pinned buffers
allocated once and used in turn, so no call pays for an output of its own and each is overwritten two calls
later. Right as each call returns, and right one call later: a grade that checked that much read it gold. Must
get: refused at correctness (a host output must stay intact through the rest of its round)."""

import torch
import torch.nn.functional as F


def prepare(weights: dict, device: str):
    return {"w": weights, "copies": torch.cuda.Stream(), "buffers": [], "calls": 0}


def forward(s: dict, x: torch.Tensor) -> torch.Tensor:
    w, copies = s["w"], s["copies"]
    if not s["buffers"]:
        s["buffers"] = [torch.empty(x.shape[0], x.shape[1], w["w2"].shape[1], pin_memory=True) for _ in range(2)]
    out = s["buffers"][s["calls"] % 2]
    s["calls"] += 1
    for i, batch in enumerate(x):
        embedded = F.normalize(F.gelu(batch @ w["w1"]) @ w["w2"], dim=-1)
        made = torch.cuda.Event()
        made.record()
        with torch.cuda.stream(copies):
            copies.wait_event(made)
            out[i].copy_(embedded, non_blocking=True)
        embedded.record_stream(copies)
    copies.synchronize()
    return out
