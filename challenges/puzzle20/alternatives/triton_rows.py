"""A Triton program a row: the whole row of 2048 values loaded at once into the program's registers, its
mean square reduced, the row scaled and stored. Triton picks the warps a program gets and asks for no
shared row, so an SM holds as many programs as their registers allow.
"""

import torch
import triton
import triton.language as tl


@triton.jit
def _rmsnorm(x, gain, out, dim, eps, BLOCK: tl.constexpr):
    row = tl.program_id(0).to(tl.int64)
    cols = tl.arange(0, BLOCK)
    inside = cols < dim
    v = tl.load(x + row * dim + cols, mask=inside, other=0.0)
    scale = tl.rsqrt(tl.sum(v * v, axis=0) / dim + eps)
    g = tl.load(gain + cols, mask=inside, other=0.0)
    tl.store(out + row * dim + cols, v * scale * g, mask=inside)


def prepare(weights: dict, device: str):
    return weights


def forward(state: dict, x: torch.Tensor) -> torch.Tensor:
    rows, dim = x.shape
    out = torch.empty_like(x)
    _rmsnorm[(rows,)](x, state["gain"], out, dim, 1e-6, BLOCK=triton.next_power_of_2(dim))
    return out
