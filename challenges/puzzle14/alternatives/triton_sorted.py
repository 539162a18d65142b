"""The candidates sorted by tenant, as the reference does, and calibrated by a Triton kernel: a program
takes 128 neighbouring candidates (one tenant's, but at a boundary) and loops to the longest curve among
them, the terms past a candidate's own rank masked out. Triton has no divergent branch to take: sorted,
its blocks loop as long as their one tenant needs; in arrival order every block would loop 512 times.
"""

import torch
import triton
import triton.language as tl
from triton.language.extra import libdevice

BLOCK = 128


@triton.jit
def _calibrate(scores, tenant, u, b, v, ranks, out, n, MAX_RANK: tl.constexpr, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    inside = offs < n
    s = tl.load(scores + offs, mask=inside, other=0.0)
    t = tl.load(tenant + offs, mask=inside, other=0)
    r = tl.load(ranks + t, mask=inside, other=0)
    acc = tl.zeros([BLOCK], dtype=tl.float32)
    for k in range(0, tl.max(r, axis=0)):  # the block's longest curve
        live = k < r
        uk = tl.load(u + t * MAX_RANK + k, mask=live, other=0.0)
        bk = tl.load(b + t * MAX_RANK + k, mask=live, other=0.0)
        vk = tl.load(v + t * MAX_RANK + k, mask=live, other=0.0)
        acc += vk * libdevice.tanh(s * uk + bk)
    tl.store(out + offs, acc, mask=inside)


def prepare(weights: dict, device: str):
    return weights


def forward(state: dict, batch: tuple[torch.Tensor, torch.Tensor]) -> torch.Tensor:
    scores, tenant = batch
    order = torch.argsort(tenant, stable=True)
    grouped = torch.empty_like(scores)
    n = scores.numel()
    _calibrate[(triton.cdiv(n, BLOCK),)](scores[order], tenant[order], state["u"], state["b"], state["v"],
                                         state["ranks"], grouped, n, MAX_RANK=state["u"].shape[1], BLOCK=BLOCK)
    out = torch.empty_like(grouped)
    out[order] = grouped
    return out
