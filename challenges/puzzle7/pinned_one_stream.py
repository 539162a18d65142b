"""A comparator (gold's second bar): the embeddings copied into pinned host memory, asynchronously, on the one
stream that computes them. Every copy runs at the link's full rate, but a stream runs one thing at a time: the
copies and the matmuls take turns, and the call lasts as long as both."""

import torch
import torch.nn.functional as F


def prepare(weights: dict, device: str):
    return weights


def forward(w: dict, x: torch.Tensor) -> torch.Tensor:
    # Pinned, and fresh for the caller to keep: torch's caching host allocator hands back a block freed earlier.
    out = torch.empty(x.shape[0], x.shape[1], w["w2"].shape[1], pin_memory=True)
    for i, batch in enumerate(x):
        out[i].copy_(F.normalize(F.gelu(batch @ w["w1"]) @ w["w2"], dim=-1), non_blocking=True)
    torch.cuda.current_stream().synchronize()  # the caller reads `out` as soon as forward() returns
    return out
