"""All experts in two batched multiplies, and no question asked of the GPU: tokens are sorted by
expert and packed into an [EXPERTS, CAPACITY, HIDDEN] buffer (the serving config caps an expert's
tokens at CAPACITY, so the shape never depends on the input), both matrices run as one bmm each over
every expert at once, and the results go back to each token's row. The whole layer is then captured
as one CUDA graph: a call copies its input in and replays eleven kernels' worth of work.
"""

import torch
import torch.nn.functional as F

TOKENS, HIDDEN, EXPERTS, CAPACITY = 2048, 1024, 64, 160


def layer(state: dict) -> None:
    """Every step on the GPU without a sync (counts by scatter_add: torch.bincount asks the GPU for
    the largest id first, and a graph cannot be captured around a sync)."""
    tokens, expert, w = state["x"], state["expert"], state["w"]
    order = torch.argsort(expert, stable=True)
    counts = torch.zeros(EXPERTS, dtype=torch.long, device=expert.device)
    counts.scatter_add_(0, expert, torch.ones_like(expert))  # tokens per expert, with no sync
    starts = torch.cumsum(counts, 0) - counts
    slot = torch.arange(TOKENS, device=tokens.device) - starts[expert[order]]  # place within its expert
    packed = state["packed"].zero_()
    packed[expert[order], slot] = tokens[order]
    h = F.gelu(torch.bmm(packed, w["up"].transpose(1, 2)))
    y = torch.bmm(h, w["down"].transpose(1, 2))
    state["out"][order] = y[expert[order], slot]


def prepare(weights: dict, device: str):
    state = {"w": weights, "x": torch.zeros(TOKENS, HIDDEN, dtype=torch.bfloat16, device=device),
             "expert": torch.arange(TOKENS, device=device) % EXPERTS,
             "packed": torch.zeros(EXPERTS, CAPACITY, HIDDEN, dtype=torch.bfloat16, device=device),
             "out": torch.empty(TOKENS, HIDDEN, dtype=torch.bfloat16, device=device)}
    side = torch.cuda.Stream()
    side.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(side):
        layer(state)
    torch.cuda.current_stream().wait_stream(side)
    state["graph"] = torch.cuda.CUDAGraph()
    with torch.cuda.graph(state["graph"]):
        layer(state)
    return state


def forward(state: dict, x: dict) -> torch.Tensor:
    state["x"].copy_(x["x"])
    state["expert"].copy_(x["expert"])
    state["graph"].replay()
    return state["out"].clone()
