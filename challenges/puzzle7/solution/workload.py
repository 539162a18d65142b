"""Pinned results, copied on a stream of their own: while the GPU embeds batch i+1, its copy engine brings batch
i's embeddings back to the host, and the call lasts about as long as the matmuls alone.

The output is pinned (torch's caching host allocator hands back a block the caller freed, so pinning costs
nothing after the first calls), so the copy engine writes it at the link's full rate and the host need not
wait for each copy. An event a batch says when its embeddings are made; the copy stream waits for it, not for
the whole compute stream. record_stream keeps each batch's embeddings from being reused by the compute
stream's allocator before their copy has read them. One wait at the end: the caller reads the output.
"""

import torch
import torch.nn.functional as F


def prepare(weights: dict, device: str):
    return {"w": weights, "copies": torch.cuda.Stream()}


def forward(s: dict, x: torch.Tensor) -> torch.Tensor:
    w, copies = s["w"], s["copies"]
    out = torch.empty(x.shape[0], x.shape[1], w["w2"].shape[1], pin_memory=True)
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
