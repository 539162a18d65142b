"""The check on the GPU without graphs: a table marks the stop tokens, each step records which sequences
have just met theirs, and the host asks whether all have ended once every CHUNK steps. No search, no
read of the tokens, one wait per chunk; the steps' kernels are launched one by one.
"""

import torch

STEPS, PAD, CHUNK = 64, -1, 8


def prepare(weights: dict, device: str):
    index = {word: t for t, word in enumerate(weights["words"])}
    is_stop = torch.zeros(len(weights["words"]), dtype=torch.bool, device=device)
    is_stop[[index[word] for word in weights["stop_words"]]] = True
    return {"w": weights, "is_stop": is_stop, "steps": torch.arange(STEPS, device=device)}


def step(w: dict, tokens: torch.Tensor) -> torch.Tensor:
    h = w["embed"][tokens]
    h = h + torch.relu(h @ w["w1"].T) @ w["w2"].T
    return (h @ w["out"].T).argmax(dim=-1)


def forward(s: dict, tokens: torch.Tensor) -> torch.Tensor:
    out = torch.full((tokens.shape[0], STEPS), PAD, dtype=torch.long, device=tokens.device)
    ends = torch.full((tokens.shape[0],), STEPS, dtype=torch.long, device=tokens.device)
    for i in range(STEPS):
        tokens = step(s["w"], tokens)
        out[:, i] = tokens
        ends.masked_fill_(s["is_stop"][tokens] & (ends == STEPS), i)
        if (i + 1) % CHUNK == 0 and bool((ends < STEPS).all()):  # one wait a chunk
            break
    return out.masked_fill(s["steps"] > ends[:, None], PAD)
