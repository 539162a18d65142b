"""Inputs for puzzle11: a reranker's 1024 -> 1024 fp32 projection of 1024 candidates, by a hand-written
CUDA matmul (out = x @ w, every matrix row-major and square).

fp32 throughout, with a tolerance (1e-5) that fp32 sums in any order meet (about 1e-6 over 1024 terms)
and TF32 or 16-bit inputs do not (about 1e-3): the kernel's shared-memory layout is the question, not
its precision.
"""

import torch

N = 1024
_INPUT_STREAM = 1 << 40


def make_weights(seed: int, device: str) -> dict:
    g = torch.Generator().manual_seed(seed)
    return {"w": (torch.randn(N, N, generator=g) * N**-0.5).to(device)}


def make_input(seed: int, device: str) -> torch.Tensor:
    """The candidates' features [N, N], fp32, row-major."""
    g = torch.Generator(device=device).manual_seed(_INPUT_STREAM + seed)
    return torch.randn(N, N, generator=g, device=device)


def least_work(l2_bytes: int) -> dict:
    """The least one forward() must do on any GPU (tutor.grading.floor): the matmul's FLOPs at fp32 (the
    tolerance rules out TF32 and 16-bit tensor cores)."""
    return {"flops": 2 * N**3, "flop_dtype": "fp32", "what": f"a {N} x {N} x {N} fp32 matmul"}
