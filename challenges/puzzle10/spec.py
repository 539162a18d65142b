"""Inputs for puzzle10: the load statistics of a mixture-of-experts router, counted on the GPU.

Every call counts how many of ROUTES token-to-expert routes (4M tokens, top-4 routing) went to each of
EXPERTS experts, as a load-balancing loss or a capacity check needs after every routing step. The
routes are skewed as routers' are: expert e draws (sqrt(e + 1) - sqrt(e)) / 8 of them, an eighth for
expert 0 and under a hundredth for expert 63. The counts are exact integers, so every honest solution
matches them exactly.
"""

import torch

ROUTES, EXPERTS = 1 << 24, 64
_INPUT_STREAM = 1 << 40


def make_weights(seed: int, device: str) -> dict:
    return {}  # nothing to load: the work is the counting


def make_input(seed: int, device: str) -> torch.Tensor:
    """ROUTES expert ids, int32, skewed towards the first experts: u^2 scaled to the experts, u uniform."""
    g = torch.Generator(device=device).manual_seed(_INPUT_STREAM + seed)
    u = torch.rand(ROUTES, generator=g, device=device)
    return (u * u * EXPERTS).to(torch.int32).clamp_(max=EXPERTS - 1)


def least_work(l2_bytes: int) -> dict:
    """The least one forward() must do on any GPU (tutor.grading.floor): read every route once (64 MB,
    more than any L2)."""
    return {"hbm_bytes": max(0, ROUTES * 4 - l2_bytes), "what": f"{ROUTES} int32 expert ids read once"}
