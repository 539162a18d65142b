"""Greedy decoding with stop words as a first server writes it: after every step, the new tokens come to
the host, are detokenised, and each sequence's text is searched for a stop word before the next step."""

import re

import torch

STEPS, PAD = 64, -1


def prepare(weights: dict, device: str):
    stop = re.compile(r"\b(?:" + "|".join(map(re.escape, weights["stop_words"])) + r")\b")
    return {**weights, "stop": stop}


def step(w: dict, tokens: torch.Tensor) -> torch.Tensor:
    h = w["embed"][tokens]
    h = h + torch.relu(h @ w["w1"].T) @ w["w2"].T
    return (h @ w["out"].T).argmax(dim=-1)


def forward(w: dict, tokens: torch.Tensor) -> torch.Tensor:
    out = torch.full((tokens.shape[0], STEPS), PAD, dtype=torch.long, device=tokens.device)
    texts = [""] * tokens.shape[0]
    ends = [STEPS] * tokens.shape[0]  # the step of each sequence's stop word
    for i in range(STEPS):
        tokens = step(w, tokens)
        out[:, i] = tokens
        for b, t in enumerate(tokens.tolist()):  # the host waits for the step, then reads every new word
            if ends[b] == STEPS:
                texts[b] += " " + w["words"][t]
                if w["stop"].search(texts[b]):
                    ends[b] = i
        if max(ends) < STEPS:
            break
    after = torch.arange(STEPS, device=out.device) > torch.tensor(ends, device=out.device)[:, None]
    return out.masked_fill(after, PAD)
