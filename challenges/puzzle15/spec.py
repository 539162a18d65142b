"""Inputs for puzzle15: a reranker's projection of 128 candidates' 8192 features onto 1024 base outputs and
the 64 columns of a rank-64 adapter's down-projection, fused into one fp32 matmul (out = x @ w, both
row-major).

fp32 throughout, with a tolerance (1e-5) that fp32 sums in any order meet (about 1e-6 over 8192 terms)
and TF32 or 16-bit inputs do not (about 1e-3): how the work is cut into blocks is the question, not the
precision.
"""

import torch

M, K = 128, 8192
BASE, ADAPTER = 1024, 64
N = BASE + ADAPTER  # 1088 = 34 tiles of 32: two more than 32, and 136 tiles of 32 x 32 for 132 SMs
_INPUT_STREAM = 1 << 40


def make_weights(seed: int, device: str) -> dict:
    g = torch.Generator().manual_seed(seed)
    return {"w": (torch.randn(K, N, generator=g) * K**-0.5).to(device)}


def make_input(seed: int, device: str) -> torch.Tensor:
    """The candidates' features [M, K], fp32, row-major."""
    g = torch.Generator(device=device).manual_seed(_INPUT_STREAM + seed)
    return torch.randn(M, K, generator=g, device=device)


def least_work(l2_bytes: int) -> dict:
    """The least one forward() must do on any GPU (tutor.grading.floor): the matmul's FLOPs at fp32 (the
    tolerance rules out TF32 and 16-bit tensor cores)."""
    return {"flops": 2 * M * K * N, "flop_dtype": "fp32", "what": f"a {M} x {K} x {N} fp32 matmul"}
