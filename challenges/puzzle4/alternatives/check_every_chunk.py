"""The smallest fix: ask whether the batch is done once every CHUNK steps instead of every step.

Still eager (five launches a step) and still a blocking .item() per check, but 12 syncs at most
instead of up to 96, at the cost of up to CHUNK - 1 steps past the end.
"""

import torch

STEPS, EOS, CHUNK = 96, 0, 8


def prepare(weights: dict, device: str):
    return weights


def step(w: dict, tokens: torch.Tensor) -> torch.Tensor:
    h = w["embed"][tokens]
    h = h + torch.relu(h @ w["w1"].T) @ w["w2"].T
    return (h @ w["out"].T).argmax(dim=-1)


def forward(w: dict, tokens: torch.Tensor) -> torch.Tensor:
    out = torch.full((tokens.shape[0], STEPS), EOS, dtype=torch.long, device=tokens.device)
    for i in range(STEPS):
        tokens = step(w, tokens)
        out[:, i] = tokens
        if (i + 1) % CHUNK == 0 and (tokens == EOS).all().item():
            break
    return out
