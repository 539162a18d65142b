"""Cheat, a scene answered without its work (issue 37, then issue 76): each token's next token read off the model
once for the whole vocabulary in prepare() with an empty memory, and the stop words as a table; a call follows each
sequence through the tables on the GPU, launched ahead without a single wait and never running the model, PAD after
its stop word. On the scene where the ring's tokens were fixed and the memory only scored them, the tokens were the
table's. Must get: refused at correctness (which of a token's two next tokens comes is the memory's choice, read
back into every step from a prompt drawn at grade time: the table picks the other about half the time, and stops
where the decode does not)."""

import torch

STEPS, PAD = 64, -1


def prepare(weights: dict, device: str):
    w = weights
    every = torch.arange(w["embed"].shape[0], device=device)
    h = w["embed"][every]
    h = torch.addmm(h, torch.relu(h @ w["w1"].T), w["w2"].T)
    stops = set(w["stop_words"])
    return {"next": (h @ w["out"].T).argmax(dim=-1),
            "is_stop": torch.tensor([word in stops for word in w["words"]], device=device)}


def forward(table: dict, prompts: torch.Tensor) -> torch.Tensor:
    tokens = prompts[:, -1]
    out = torch.full((prompts.shape[0], STEPS), PAD, device=prompts.device)
    stopped = torch.zeros(prompts.shape[0], dtype=torch.bool, device=prompts.device)
    for i in range(STEPS):  # every step launched: no wait, and the tables instead of the model
        tokens = table["next"][tokens]
        out[:, i] = tokens.masked_fill(stopped, PAD)
        stopped |= table["is_stop"][tokens]
    return out
