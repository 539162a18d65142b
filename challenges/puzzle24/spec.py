"""Inputs for puzzle24: the scoring tower of a recommender, run over every candidate a request brings.

One forward() scores a batch of BATCH candidates: each candidate's features [FEATURES] in fp32 go through three
linear layers (FEATURES -> HIDDEN -> HIDDEN -> SCORES, a GELU after the first two) and come back as SCORES scores
in fp32, [BATCH, SCORES]. The weights are drawn at grade time, as are the candidates of every call.
"""

import torch

BATCH, FEATURES, HIDDEN, SCORES = 8192, 4096, 4096, 1024
_WEIGHT_STREAM, _INPUT_STREAM, _WARMUP_STREAM = 1 << 45, 1 << 46, 1 << 47


def make_weights(seed: int, device: str) -> dict:
    """The three layers' weights [in, out] (x @ w) and biases, in fp32, scaled so every layer's outputs stay near
    unit size."""
    g = torch.Generator().manual_seed(_WEIGHT_STREAM + seed)
    shapes = [(FEATURES, HIDDEN), (HIDDEN, HIDDEN), (HIDDEN, SCORES)]
    weights = {}
    for n, (fan_in, fan_out) in enumerate(shapes):
        weights[f"w{n}"] = (torch.randn(fan_in, fan_out, generator=g) * fan_in ** -0.5).to(device)
        weights[f"b{n}"] = (torch.randn(fan_out, generator=g) * 0.1).to(device)
    return weights


def _candidates(stream: int, device: str) -> torch.Tensor:
    """BATCH candidates' features [BATCH, FEATURES] in fp32, drawn on the device (128 MB a call)."""
    g = torch.Generator(device=device).manual_seed(stream)
    return torch.randn(BATCH, FEATURES, generator=g, device=device)


def make_input(seed: int, device: str) -> torch.Tensor:
    return _candidates(_INPUT_STREAM + seed, device)


def warmup_inputs(seed: int, device: str) -> list[torch.Tensor]:
    return [_candidates(_WARMUP_STREAM + seed * 4 + i, device) for i in range(2)]


def least_work(l2_bytes: int) -> dict:
    """The least one forward() must do on any GPU (tutor.grading.floor): the three layers' multiply-adds, at the
    card's best matrix rate."""
    flops = 2 * BATCH * (FEATURES * HIDDEN + HIDDEN * HIDDEN + HIDDEN * SCORES)
    return {"flops": flops, "what": f"3 layers' multiply-adds over {BATCH} candidates"}
