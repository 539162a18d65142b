"""Inputs for puzzle25: a prefill batch through a model split in two stages over 2 GPUs, 16384 tokens.

Eight residual MLP layers, x = x + gelu(x @ w1) @ w2: stage 0 (rank 0, GPU 0) holds the first four, stage 1
(rank 1, GPU 1) the last four. A call takes the batch's hidden states through all eight and returns them. Every
rank gets the same input and only its stage's layers (`shard`: the harness hands prepare() nothing else), and
every rank's output is checked: each returns the batch's final hidden states. bf16 as served.
"""

import torch

LAYERS, TOKENS, HIDDEN, FFN = 8, 16384, 4096, 8192
_INPUT_STREAM = 1 << 40
# GPU memory a rank may keep past its stage's layers (buffers, graph pools): less than the other stage's 512 MiB.
RANK_SLACK_BYTES = 256 << 20


def make_weights(seed: int, device: str) -> dict:
    """Every layer's w1 [HIDDEN, FFN] and w2 [FFN, HIDDEN], bf16 (each rank is given its stage's: shard)."""
    g = torch.Generator(device=device).manual_seed(seed)
    layers = []
    for _ in range(LAYERS):
        w1 = torch.randn(HIDDEN, FFN, generator=g, device=device) * HIDDEN**-0.5
        w2 = torch.randn(FFN, HIDDEN, generator=g, device=device) * (0.5 * FFN**-0.5)
        layers.append({"w1": w1.to(torch.bfloat16), "w2": w2.to(torch.bfloat16)})
    return {"layers": layers}


def shard(weights: dict, rank: int, world: int) -> dict:
    """What rank `rank` holds: its stage's layers, in order (the first LAYERS // world on rank 0)."""
    per = len(weights["layers"]) // world
    return {"layers": weights["layers"][rank * per:(rank + 1) * per]}


def make_input(seed: int, device: str) -> torch.Tensor:
    """The batch's hidden states [TOKENS, HIDDEN], bf16, the same on every rank."""
    g = torch.Generator(device=device).manual_seed(_INPUT_STREAM + seed)
    return torch.randn(TOKENS, HIDDEN, generator=g, device=device).to(torch.bfloat16)


def least_work(l2_bytes: int) -> dict:
    """The least one forward() must do on one GPU of the two (tutor.grading.floor): its stage's matmuls at the
    bf16 rate (the activations' 128 MB each way are a fraction of a millisecond of NVLink more)."""
    return {"flops": 2 * 2 * TOKENS * HIDDEN * FFN * LAYERS // 2, "flop_dtype": "bf16",
            "what": f"{LAYERS // 2} layers' matmuls ({TOKENS} x {HIDDEN} x {FFN}, twice) on each of 2 GPUs"}
