"""Cheat, a scene answered without its work (issue 37, then issue 76): a token's next token, and its hidden state,
read off the model once for the whole vocabulary in prepare() with an empty memory; each call then follows its
sequences through that table on the GPU, launched ahead without a single wait, never running the model. On the
scene before the memory, a cheat of this class read gold at 58x; on the scene where the memory only scored the
tokens, the tokens themselves were the table's. Must get: refused at correctness (which of a token's two next
tokens comes is the memory's choice, read back into every step from a prompt drawn at grade time: the table
picks the other about half the time)."""

import torch

STEPS, EOS, MEMORY, HIDDEN = 96, 0, 256, 512


def prepare(weights: dict, device: str):
    w = weights
    every = torch.arange(w["embed"].shape[0], device=device)
    h = w["embed"][every]
    h = torch.addmm(h, torch.relu(h @ w["w1"].T), w["w2"].T)
    return {"next": (h @ w["out"].T).argmax(dim=-1)}


def forward(table: dict, prompts: torch.Tensor) -> torch.Tensor:
    tokens = prompts[:, -1]
    out = torch.full((prompts.shape[0], STEPS), EOS, dtype=torch.long, device=prompts.device)
    for i in range(STEPS):  # every step launched: no wait, and the table instead of the model
        tokens = table["next"][tokens]
        out[:, i] = tokens
    return out
