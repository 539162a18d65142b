"""Cheat, one checked call in a timed loop (issue 37): tells the call clock's calls back to back from the others by
the gaps of its own host clock alone, and answers them with every sequence ended at once; after a pause (the
warm-up, the checks, the warm call) it decodes as the baseline does. On a grade that checked the loop's last call
alone, a cheat of this class read silver (2.48x). Must get: refused at correctness (every call of a round is
checked, the warm call's included)."""

import time

import torch

STEPS, EOS = 96, 0
PAUSE_S = 0.002  # longer than a call back to back waits for the next; shorter than the harness's pipe
last = [0.0]


def prepare(weights: dict, device: str):
    return weights


def step(w: dict, tokens: torch.Tensor) -> torch.Tensor:
    h = w["embed"][tokens]
    h = h + torch.relu(h @ w["w1"].T) @ w["w2"].T
    return (h @ w["out"].T).argmax(dim=-1)


def decode(w: dict, tokens: torch.Tensor) -> torch.Tensor:
    out = torch.full((tokens.shape[0], STEPS), EOS, dtype=torch.long, device=tokens.device)
    for i in range(STEPS):
        tokens = step(w, tokens)
        out[:, i] = tokens
        if (tokens == EOS).all():
            break
    return out


def forward(w: dict, tokens: torch.Tensor) -> torch.Tensor:
    back_to_back = time.perf_counter() - last[0] < PAUSE_S
    out = torch.full((tokens.shape[0], STEPS), EOS, dtype=torch.long, device=tokens.device) if back_to_back \
        else decode(w, tokens)
    last[0] = time.perf_counter()
    return out
