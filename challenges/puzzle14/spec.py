"""Inputs for puzzle14: a batch of candidates from every tenant of a reranking service, each candidate's 8 ranking
features to be calibrated by its own tenant's curve.

A tenant's curve is a sum of `rank` tanh units over the features, v[k] * tanh(u[k] . x + b[k]); the ranks differ
by tenant (16 to 512: fitted to how much data each tenant had). Eight features make a curve no table can hold:
every unit's term has to be summed. The candidates of all tenants arrive interleaved, so any 32 neighbours
belong to several tenants, and almost always to the one of rank 512.
"""

import math

import torch

TOKENS, DIM = 1 << 22, 8
RANKS = (16, 16, 16, 16, 16, 16, 32, 512)  # by tenant: six small, one middling, one large with a long curve
TENANTS, MAX_RANK = len(RANKS), max(RANKS)
_WEIGHTS_STREAM, _INPUT_STREAM = 1 << 20, 1 << 40


def make_weights(seed: int, device: str) -> dict:
    """Each tenant's curve: u [TENANTS, MAX_RANK, DIM], b and v [TENANTS, MAX_RANK], fp32, zero past the tenant's
    rank, and the ranks."""
    g = torch.Generator().manual_seed(_WEIGHTS_STREAM + seed)
    live = torch.arange(MAX_RANK)[None, :] < torch.tensor(RANKS)[:, None]
    u = torch.randn(TENANTS, MAX_RANK, DIM, generator=g) * DIM**-0.5 * live[..., None]
    b = torch.randn(TENANTS, MAX_RANK, generator=g) * live
    # Every term counts: no tail small enough to drop (a curve cut short fails the tolerance).
    v = torch.randn(TENANTS, MAX_RANK, generator=g) * live / torch.tensor([math.sqrt(r) for r in RANKS])[:, None]
    return {"u": u.to(device), "b": b.to(device), "v": v.to(device),
            "ranks": torch.tensor(RANKS, dtype=torch.int32, device=device)}


def make_input(seed: int, device: str) -> tuple[torch.Tensor, torch.Tensor]:
    """(features [TOKENS, DIM] fp32, tenant [TOKENS] int32): each candidate's tenant drawn uniformly, in arrival
    order."""
    g = torch.Generator(device=device).manual_seed(_INPUT_STREAM + seed)
    features = torch.randn(TOKENS, DIM, generator=g, device=device)
    tenant = torch.randint(0, TENANTS, (TOKENS,), generator=g, device=device, dtype=torch.int32)
    return features, tenant


def least_work(l2_bytes: int) -> dict:
    """The least one forward() must do on any GPU (tutor.grading.floor): each candidate's own tenant's units, a
    DIM-long dot product and one more FMA a unit (the tanh not counted: a floor, not an estimate), and its
    features, tenant and result through DRAM once."""
    terms = TOKENS * sum(RANKS) / TENANTS
    return {"flops": 2 * (DIM + 1) * terms, "flop_dtype": "fp32",
            "hbm_bytes": max(0, TOKENS * (4 * DIM + 8) - l2_bytes),
            "what": f"{TOKENS} candidates' tanh units over {DIM} features, {sum(RANKS) / TENANTS:.0f} a candidate on average"}
