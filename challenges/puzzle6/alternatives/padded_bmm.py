"""The batched fix without the graph: tokens sorted and packed per expert, two bmm calls over all
experts at once, no per-expert loop and no question asked of the GPU; launched eagerly every call."""

import torch
import torch.nn.functional as F

TOKENS, HIDDEN, EXPERTS, CAPACITY = 2048, 1024, 64, 160


def prepare(weights: dict, device: str):
    return weights


def forward(w: dict, x: dict) -> torch.Tensor:
    tokens, expert = x["x"], x["expert"]
    order = torch.argsort(expert, stable=True)
    counts = torch.zeros(EXPERTS, dtype=torch.long, device=expert.device)
    counts.scatter_add_(0, expert, torch.ones_like(expert))  # tokens per expert, with no sync
    slot = torch.arange(TOKENS, device=tokens.device) - (torch.cumsum(counts, 0) - counts)[expert[order]]
    packed = tokens.new_zeros(EXPERTS, CAPACITY, HIDDEN)
    packed[expert[order], slot] = tokens[order]
    y = torch.bmm(F.gelu(torch.bmm(packed, w["up"].transpose(1, 2))), w["down"].transpose(1, 2))
    out = torch.empty_like(tokens)
    out[order] = y[expert[order], slot]
    return out
