"""Inputs for puzzle13: one tensor-parallel MLP block over 2 GPUs, a batch of 256 requests' hidden states.

Megatron's split: w1's columns halved between the ranks (each computes half of the 8192 hidden units),
w2's rows halved to match, so each rank's product is a partial sum of the block's output and the two
must be added (an all-reduce) before the next layer. Every rank gets the same input and only its halves
(`shard`: the harness hands prepare() nothing else), and every rank's output is checked: each returns the
block's whole output. bf16 as served; with two ranks a sum is a + b on both sides, so bucketing the all-reduce
changes no bit of it.
"""

import torch

BATCH, HIDDEN, FFN = 256, 4096, 8192
_INPUT_STREAM = 1 << 40
# GPU memory a rank may keep past its shard (buffers, graph pools): less than the other rank's 64 MiB.
RANK_SLACK_BYTES = 48 << 20


def make_weights(seed: int, device: str) -> dict:
    g = torch.Generator().manual_seed(seed)
    return {"w1": (torch.randn(HIDDEN, FFN, generator=g) * HIDDEN**-0.5).to(device, torch.bfloat16),
            "w2": (torch.randn(FFN, HIDDEN, generator=g) * FFN**-0.5).to(device, torch.bfloat16)}


def shard(weights: dict, rank: int, world: int) -> dict:
    """What rank `rank` holds: w1's columns and w2's rows for its share of the hidden units."""
    part = weights["w1"].shape[1] // world
    cols = slice(rank * part, (rank + 1) * part)
    return {"w1": weights["w1"][:, cols].contiguous(), "w2": weights["w2"][cols].contiguous()}


def make_input(seed: int, device: str) -> torch.Tensor:
    """The batch's hidden states [BATCH, HIDDEN], bf16, the same on every rank."""
    g = torch.Generator(device=device).manual_seed(_INPUT_STREAM + seed)
    return torch.randn(BATCH, HIDDEN, generator=g, device=device).to(torch.bfloat16)


def least_work(l2_bytes: int) -> dict:
    """The least one forward() must do (tutor.grading.floor), on one GPU of the two: its half of the MLP's
    FLOPs at the bf16 rate (the all-reduce of 2 MB over NVLink is microseconds more)."""
    return {"flops": 2 * BATCH * HIDDEN * FFN, "flop_dtype": "bf16",
            "what": f"half of a {BATCH} x {HIDDEN} x {FFN} MLP on each of 2 GPUs"}
