"""Inputs for puzzle16: a two-stage pipeline over 2 GPUs, one microbatch of 1024 tokens' hidden states.

Stage 0 (rank 0, GPU 0) runs the first half of the block, h = gelu(x @ w0); stage 1 (rank 1, GPU 1) the
second, y = h @ w1; y goes back to rank 0, where the sampler lives. Every rank gets the same input and only
its stage's weights (`shard`: the harness hands prepare() nothing else), and every rank's output is checked:
each returns y. bf16 as served: 8 MB of activations each way a call.
"""

import torch

TOKENS, HIDDEN = 1024, 4096
_INPUT_STREAM = 1 << 40
# GPU memory a rank may keep past its stage's weights (buffers, graph pools): less than the other stage's 32 MiB.
RANK_SLACK_BYTES = 24 << 20


def make_weights(seed: int, device: str) -> dict:
    g = torch.Generator().manual_seed(seed)
    return {"w0": (torch.randn(HIDDEN, HIDDEN, generator=g) * HIDDEN**-0.5).to(device, torch.bfloat16),
            "w1": (torch.randn(HIDDEN, HIDDEN, generator=g) * HIDDEN**-0.5).to(device, torch.bfloat16)}


def shard(weights: dict, rank: int, world: int) -> dict:
    """What rank `rank` holds: its stage's weights, as "w"."""
    return {"w": weights["w0"] if rank == 0 else weights["w1"]}


def make_input(seed: int, device: str) -> torch.Tensor:
    """The microbatch's hidden states [TOKENS, HIDDEN], bf16, the same on every rank."""
    g = torch.Generator(device=device).manual_seed(_INPUT_STREAM + seed)
    return torch.randn(TOKENS, HIDDEN, generator=g, device=device).to(torch.bfloat16)


def least_work(l2_bytes: int) -> dict:
    """The least one forward() must do (tutor.grading.floor), on one GPU of the two: its stage's matmul at the
    bf16 rate (the two 8 MB handoffs over NVLink are tens of microseconds more)."""
    return {"flops": 2 * TOKENS * HIDDEN * HIDDEN, "flop_dtype": "bf16",
            "what": f"one {TOKENS} x {HIDDEN} x {HIDDEN} matmul on each of 2 GPUs"}
