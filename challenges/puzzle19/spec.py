"""Inputs for puzzle19: one decode step of a tensor-parallel model's MLP layers over 2 GPUs, 16 tokens.

Megatron's split, as in puzzle13: each layer's w1 columns and w2 rows are halved between the ranks, each
rank's product is a partial sum of the layer's output, and an all-reduce adds the two before the residual
and the next layer. At decode a step has 16 tokens: each rank's half of a layer is 117 MB of weights read
for 16 rows, so the matmuls are bound by reading the weights, and each all-reduce (128 KB) by its fixed
cost. Every rank gets the same input and only its halves (`shard`: the harness hands prepare() nothing
else), and every rank's output is checked: each returns the step's whole hidden states. bf16 as served.
"""

import torch

LAYERS, TOKENS, HIDDEN, FFN = 2, 16, 4096, 14336
_INPUT_STREAM = 1 << 40
# GPU memory a rank may keep past its halves (buffers, graph pools): less than the other rank's 224 MiB.
RANK_SLACK_BYTES = 128 << 20


def make_weights(seed: int, device: str) -> dict:
    """Each layer's whole w1 [HIDDEN, FFN] and w2 [FFN, HIDDEN], bf16 (each rank is given its halves: shard)."""
    g = torch.Generator(device=device).manual_seed(seed)
    layers = []
    for _ in range(LAYERS):
        w1 = torch.randn(HIDDEN, FFN, generator=g, device=device) * HIDDEN**-0.5
        w2 = torch.randn(FFN, HIDDEN, generator=g, device=device) * FFN**-0.5
        layers.append({"w1": w1.to(torch.bfloat16), "w2": w2.to(torch.bfloat16)})
    return {"layers": layers}


def shard(weights: dict, rank: int, world: int) -> dict:
    """What rank `rank` holds: each layer's w1 columns and w2 rows for its share of the hidden units."""
    part = FFN // world
    cols = slice(rank * part, (rank + 1) * part)
    return {"layers": [{"w1": layer["w1"][:, cols].contiguous(), "w2": layer["w2"][cols].contiguous()}
                       for layer in weights["layers"]]}


def make_input(seed: int, device: str) -> torch.Tensor:
    """This step's hidden states [TOKENS, HIDDEN], bf16, the same on every rank."""
    g = torch.Generator(device=device).manual_seed(_INPUT_STREAM + seed)
    return torch.randn(TOKENS, HIDDEN, generator=g, device=device).to(torch.bfloat16)


def least_work(l2_bytes: int) -> dict:
    """The least one forward() must do on one GPU of the two (tutor.grading.floor): read its half of every
    layer's weights once (the all-reduces' 128 KB each are microseconds of NVLink more)."""
    return {"hbm_bytes": LAYERS * 2 * HIDDEN * (FFN // 2) * 2,
            "what": f"half of {LAYERS} layers' weights ({HIDDEN} x {FFN}, bf16) read once on each of 2 GPUs"}
