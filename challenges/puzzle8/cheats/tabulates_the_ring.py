"""Cheat, a scene answered without its work (issue 37): the ring is public (the spec draws it from a fixed seed),
so a token's successor needs no model. In prepare() it decodes every start token's whole stretch of the ring once,
batched, from an empty memory, and keeps each step's score; a call looks its answer up by each prompt's last
token and zeroes it after the stop word the ring says, running no step of the model and no search. When a call
returned tokens, this answered it exactly.
Must get: refused at correctness (each score reads a memory of the whole history, the prompt drawn at grade time
included: an empty memory's scores miss by far more than the tolerance)."""

import torch

VOCAB, STEPS, MEMORY, HIDDEN, STOP_EVERY = 8192, 64, 256, 1024, 64
ORDER = torch.randperm(VOCAB, generator=torch.Generator().manual_seed(8))  # the spec's ring, drawn as it draws it


def step(w: dict, tokens: torch.Tensor, memory: torch.Tensor):
    mixed = memory @ w["mix"]
    h = w["embed"][tokens] + mixed[:, :HIDDEN].to(torch.bfloat16)
    h = torch.addmm(h, torch.relu(h @ w["w1"].T), w["w2"].T)
    tokens = (h @ w["out"].T).argmax(dim=-1)
    memory = torch.tanh(torch.addmm(mixed[:, HIDDEN:], h.float(), w["write"]))
    return tokens, 1 + memory @ w["gate"], memory


def prepare(weights: dict, device: str):
    tokens = torch.arange(VOCAB, device=device)  # every start token at once
    memory = torch.zeros(VOCAB, MEMORY, device=device)
    scores = []
    for _ in range(STEPS):
        tokens, score, memory = step(weights, tokens, memory)
        scores.append(score)
    place = torch.argsort(ORDER).to(device)
    ends = STOP_EVERY - 2 - place % STOP_EVERY  # the step each start token's stretch meets its stop word
    table = torch.stack(scores, 1)
    return table.masked_fill(torch.arange(STEPS, device=device) > ends[:, None], 0.0)


def forward(table: torch.Tensor, prompts: torch.Tensor) -> torch.Tensor:
    return table[prompts[:, -1]]
