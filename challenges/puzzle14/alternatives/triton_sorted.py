"""The candidates sorted by tenant, as the reference does, and calibrated by a Triton kernel: a program
takes 128 neighbours of the sorted order (one tenant's, but at a boundary), read and written where they
arrived, and loops to the longest curve among them, the units past a candidate's own rank masked out.
Triton has no divergent branch to take: sorted, its blocks loop as long as their one tenant needs; in
arrival order every block would loop 512 times.
"""

import torch
import triton
import triton.language as tl
from triton.language.extra import libdevice

BLOCK = 128


@triton.jit
def _calibrate(x, tenant, u, b, v, ranks, order, out, n, MAX_RANK: tl.constexpr, DIM: tl.constexpr,
               BLOCK: tl.constexpr):
    slots = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    dims = tl.arange(0, DIM)
    inside = slots < n
    offs = tl.load(order + slots, mask=inside, other=0)  # the candidates these slots take, in tenant order
    xs = tl.load(x + offs[:, None] * DIM + dims[None, :], mask=inside[:, None], other=0.0)  # [BLOCK, DIM]
    t = tl.load(tenant + offs, mask=inside, other=0)
    r = tl.load(ranks + t, mask=inside, other=0)
    acc = tl.zeros([BLOCK], dtype=tl.float32)
    for k in range(0, tl.max(r, axis=0)):  # the block's longest curve
        live = k < r
        unit = t * MAX_RANK + k
        uk = tl.load(u + unit[:, None] * DIM + dims[None, :], mask=live[:, None], other=0.0)
        bk = tl.load(b + unit, mask=live, other=0.0)
        vk = tl.load(v + unit, mask=live, other=0.0)
        acc += vk * libdevice.tanh(tl.sum(xs * uk, axis=1) + bk)
    tl.store(out + offs, acc, mask=inside)


def prepare(weights: dict, device: str):
    return weights


def forward(state: dict, batch: tuple[torch.Tensor, torch.Tensor]) -> torch.Tensor:
    x, tenant = batch
    order = torch.argsort(tenant, stable=True)
    n, dim = x.shape
    out = torch.empty(n, dtype=x.dtype, device=x.device)
    _calibrate[(triton.cdiv(n, BLOCK),)](x, tenant, state["u"], state["b"], state["v"], state["ranks"], order, out,
                                         n, MAX_RANK=state["u"].shape[1], DIM=dim, BLOCK=BLOCK)
    return out
