"""Inputs for puzzle6: one mixture-of-experts feed-forward layer, 2048 tokens routed to 64 experts.

The routing is part of the input (the router ran in the layer before), so every workload sends each
token to the same expert. Real routers are skewed: here a few experts take over a hundred tokens and
many take a handful, and no expert ever takes more than CAPACITY (the serving config's limit).
"""

import torch

TOKENS, HIDDEN, FFN, EXPERTS, CAPACITY = 2048, 1024, 1024, 64, 160
_INPUT_STREAM = 1 << 40


def make_weights(seed: int, device: str) -> dict:
    g = torch.Generator().manual_seed(seed)
    up = torch.randn(EXPERTS, FFN, HIDDEN, generator=g) * HIDDEN**-0.5
    down = torch.randn(EXPERTS, HIDDEN, FFN, generator=g) * FFN**-0.5
    return {"up": up.to(torch.bfloat16).to(device), "down": down.to(torch.bfloat16).to(device)}


def make_input(seed: int, device: str) -> dict:
    """Tokens and the expert each one goes to: a skewed, capped share per expert, in shuffled order."""
    g = torch.Generator().manual_seed(_INPUT_STREAM + seed)
    popularity = torch.rand(EXPERTS, generator=g) ** 3  # a few popular experts, many quiet ones
    counts = torch.minimum((popularity / popularity.sum() * TOKENS).floor().long(), torch.tensor(CAPACITY))
    rest = TOKENS - int(counts.sum())
    for e in torch.argsort(counts).tolist():  # the rest to the quietest experts, none past CAPACITY
        add = min(CAPACITY - int(counts[e]), rest)
        counts[e] += add
        rest -= add
    expert = torch.repeat_interleave(torch.arange(EXPERTS), counts)[torch.randperm(TOKENS, generator=g)]
    x = torch.randn(TOKENS, HIDDEN, generator=g).to(torch.bfloat16)
    return {"x": x.to(device), "expert": expert.to(device)}


def least_work(l2_bytes: int) -> dict:
    """The least one forward() must do on any GPU (tutor.grading.floor): 4 FLOPs per token per weight of
    its expert's two matrices, at the fp8 rate (the fastest format that could keep the tolerance)."""
    return {"flops": 2 * 2 * TOKENS * HIDDEN * FFN, "flop_dtype": "fp8",
            "what": f"{TOKENS} tokens through their expert's two {HIDDEN}x{FFN} matrices at the fp8 rate"}
