"""Cheat, a scene answered without its work (issue 37): a token's successor, and its hidden state, depend on that token
alone, so one batched step over the whole vocabulary in prepare() tabulates them; each call then follows its
sequences through the tables on the GPU, launched ahead without a single wait, and scores each token from a memory
that only read the chain's tabulated hidden states (starting at zero: the prompt is not read). On the scene before
the memory, a cheat of this class read gold at 58x. Must get: refused at correctness (the memory starts from a
prompt drawn at grade time and is read back into every step, so no table holds the scores)."""

import torch

STEPS, EOS, MEMORY, HIDDEN = 96, 0, 256, 512


def prepare(weights: dict, device: str):
    w = weights
    every = torch.arange(w["embed"].shape[0], device=device)
    h = w["embed"][every]
    h = h + torch.relu(h @ w["w1"].T) @ w["w2"].T
    return {"w": w, "next": (h @ w["out"].T).argmax(dim=-1), "written": h.float() @ w["write"]}


def forward(table: dict, prompts: torch.Tensor) -> torch.Tensor:
    w, tokens = table["w"], prompts[:, -1]
    memory = torch.zeros(prompts.shape[0], MEMORY, device=prompts.device)
    out = torch.zeros(prompts.shape[0], STEPS, device=prompts.device)
    running = torch.ones((), dtype=torch.bool, device=prompts.device)
    for i in range(STEPS):  # every step launched: no wait, and the tables instead of the model
        memory = torch.tanh(memory @ w["mix"][:, HIDDEN:] + table["written"][tokens])
        out[:, i] = (memory @ w["gate"]) * running
        tokens = table["next"][tokens]
        running = running & (tokens != EOS).any()
    return out
