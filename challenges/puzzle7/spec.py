"""Inputs for puzzle7: an embedding service turns 8 request batches a call, 4096 rows each, into 1024-wide fp32
embeddings that must end up in host memory, where the vector index lives.

The encoder's hidden states are on the GPU when a call starts (the input, fresh every call). forward() returns
one CPU tensor [BATCHES, ROWS, DIM], filled when it returns, which the caller keeps: a later call must not write
into it (puzzle.toml's output = "host"; the harness checks all three). fp32 end to end, with a tolerance (1e-5)
that fp32 arithmetic in any order meets (about 3e-7 from float64 on the CPU) and a cast to 16 bits for the trip
does not (1.5e-4 through fp16 and more through bf16; TF32 matmuls fail it as well).
"""

import torch

BATCHES, ROWS, FEATURES, HIDDEN, DIM = 8, 4096, 1024, 1024, 1024
_INPUT_STREAM = 1 << 40


def make_weights(seed: int, device: str) -> dict:
    g = torch.Generator().manual_seed(seed)
    return {"w1": (torch.randn(FEATURES, HIDDEN, generator=g) * FEATURES**-0.5).to(device),
            "w2": (torch.randn(HIDDEN, DIM, generator=g) * HIDDEN**-0.5).to(device)}


def make_input(seed: int, device: str) -> torch.Tensor:
    """The encoder's last hidden states, [BATCHES, ROWS, FEATURES] fp32, where the encoder left them."""
    g = torch.Generator(device=device).manual_seed(_INPUT_STREAM + seed)
    return torch.randn(BATCHES, ROWS, FEATURES, generator=g, device=device)


def least_work(l2_bytes: int) -> dict:
    """The least one forward() must do on any GPU (tutor.grading.floor): every embedding crosses the host link
    once, at 4 bytes a value (16 bits fail the tolerance), and the two matmuls run in fp32. They may overlap,
    so the floor is the longer of the two."""
    return {"d2h_bytes": BATCHES * ROWS * DIM * 4, "flops": 2 * BATCHES * ROWS * HIDDEN * (FEATURES + DIM),
            "flop_dtype": "fp32", "what": f"{BATCHES} batches of {ROWS} x {DIM} fp32 embeddings copied to the host "
                                          f"after two fp32 matmuls each"}
