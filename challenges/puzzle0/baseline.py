"""Per-row feature scaling, as first written for a recommender's request path."""

import torch


def prepare(weights: dict, device: str):
    return weights


def forward(state, x: torch.Tensor) -> torch.Tensor:
    rows = []
    for row in x:
        mu = row.mean()
        sigma = row.std()
        z = (row - mu) / (sigma + 1e-5)
        z = torch.clamp(z, -3.0, 3.0)
        rows.append(z * state["scale"] + state["shift"])
    return torch.stack(rows)
