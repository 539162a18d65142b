"""Cheat, a scene answered without its work (issue 37): tabulates each tenant's curve in prepare() and answers every
candidate by lookup, never summing a unit. When a candidate had one score, a tenant's curve was a function of one
number, and a fine enough table of it met the tolerance. Over 8 features no grid fits in memory, so it keeps the
best table that does: an additive one, a table a feature (the curve's mean along each feature, from samples drawn
in prepare()), summed.
Must get: refused at correctness (a curve over 8 features is no sum of one-feature curves: far more than 1e-5 off)."""

import torch

BINS, SAMPLES, REACH = 512, 1 << 16, 4.0  # a table's cells over [-REACH, REACH) of each feature


def cells(x: torch.Tensor, edges: torch.Tensor) -> torch.Tensor:
    return torch.bucketize(x.clamp(-REACH, REACH - 1e-4), edges, right=True) - 1


def prepare(weights: dict, device: str):
    u, b, v = weights["u"], weights["b"], weights["v"]
    tenants, _, dim = u.shape
    g = torch.Generator(device=device).manual_seed(0)
    edges = torch.linspace(-REACH, REACH, BINS + 1, device=device)
    tables = torch.zeros(tenants, dim, BINS, device=device)
    base = torch.zeros(tenants, device=device)
    for t in range(tenants):
        xs = torch.randn(SAMPLES, dim, generator=g, device=device)
        ys = torch.tanh(xs @ u[t].T + b[t]) @ v[t]
        base[t] = ys.mean()
        for d in range(dim):  # the curve's mean in each cell of feature d: its main effect
            cell = cells(xs[:, d], edges)
            sums = torch.zeros(BINS, device=device).index_add_(0, cell, ys - base[t])
            counts = torch.zeros(BINS, device=device).index_add_(0, cell, torch.ones_like(ys))
            tables[t, d] = sums / counts.clamp(min=1)
    return {"tables": tables, "base": base, "edges": edges}


def forward(state: dict, batch: tuple[torch.Tensor, torch.Tensor]) -> torch.Tensor:
    x, tenant = batch
    t = tenant.long()
    features = torch.arange(x.shape[1], device=x.device)
    return state["base"][t] + state["tables"][t[:, None], features[None, :], cells(x, state["edges"])].sum(1)
