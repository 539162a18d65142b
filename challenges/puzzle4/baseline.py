"""Greedy decoding as a first server writes it: the prompt read a token at a time, then one step at a time,
stopping once every sequence has ended. Returns each sequence's tokens (end-of-sequence after the batch ends)."""

import torch

STEPS, EOS, MEMORY, HIDDEN = 96, 0, 256, 512


def prepare(weights: dict, device: str):
    return weights


def step(w: dict, tokens: torch.Tensor, memory: torch.Tensor):
    """One token of each sequence in: the next token and the memory after it."""
    mixed = memory @ w["mix"]  # the memory's read-back and its rotation, in one product
    h = w["embed"][tokens] + mixed[:, :HIDDEN].to(torch.bfloat16)
    h = torch.addmm(h, torch.relu(h @ w["w1"].T), w["w2"].T)
    tokens = (h @ w["out"].T).argmax(dim=-1)
    memory = torch.tanh(torch.addmm(mixed[:, HIDDEN:], h.float(), w["write"]))
    return tokens, memory


def forward(w: dict, prompts: torch.Tensor) -> torch.Tensor:
    memory = torch.zeros(prompts.shape[0], MEMORY, device=prompts.device)
    for j in range(prompts.shape[1] - 1):  # read the prompt: only the memory it leaves matters
        _, memory = step(w, prompts[:, j], memory)
    tokens = prompts[:, -1]
    out = torch.full((prompts.shape[0], STEPS), EOS, dtype=torch.long, device=prompts.device)
    for i in range(STEPS):
        tokens, memory = step(w, tokens, memory)
        out[:, i] = tokens
        if (tokens == EOS).all():  # stop as soon as the whole batch is done
            break
    return out
