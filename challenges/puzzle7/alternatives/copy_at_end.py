"""Embed everything, then bring it all back in one go: every batch into one GPU tensor, one asynchronous copy of
all of it into pinned host memory, one wait. The copy runs at the link's full rate, but only after the last
matmul: nothing overlaps.
"""

import torch
import torch.nn.functional as F


def prepare(weights: dict, device: str):
    return weights


def forward(w: dict, x: torch.Tensor) -> torch.Tensor:
    embedded = F.normalize(F.gelu(x @ w["w1"]) @ w["w2"], dim=-1)  # all batches at once: [BATCHES, ROWS, DIM]
    out = torch.empty(embedded.shape, pin_memory=True)
    out.copy_(embedded, non_blocking=True)
    torch.cuda.current_stream().synchronize()
    return out
