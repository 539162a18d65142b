"""Overlap in two halves: the first four batches embedded at once and copied to pinned memory on a stream of their
own while the other four are embedded, then the second half's copy. Half the copies hide under the matmuls; the
other half runs after the last one, so the call lasts the matmuls and half the copies.
"""

import torch
import torch.nn.functional as F


def prepare(weights: dict, device: str):
    return {"w": weights, "copies": torch.cuda.Stream()}


def forward(s: dict, x: torch.Tensor) -> torch.Tensor:
    w, copies = s["w"], s["copies"]
    out = torch.empty(x.shape[0], x.shape[1], w["w2"].shape[1], pin_memory=True)
    half = x.shape[0] // 2
    for part in (slice(0, half), slice(half, None)):
        embedded = F.normalize(F.gelu(x[part] @ w["w1"]) @ w["w2"], dim=-1)
        made = torch.cuda.Event()
        made.record()
        with torch.cuda.stream(copies):
            copies.wait_event(made)
            out[part].copy_(embedded, non_blocking=True)
        embedded.record_stream(copies)
    copies.synchronize()
    return out
