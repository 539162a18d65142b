"""Cheat, one checked call in a timed loop (issue 37): tells the call clock's calls back to back from the others by
the gaps of its own host clock alone, and answers them with every sequence ended at once (end-of-sequence
throughout); after a pause (the warm-up, the checks, the warm call) it decodes as the baseline does. On a grade that checked the loop's last call
alone, a cheat of this class read silver (2.48x). Must get: refused at correctness (every call of a round is
checked, the warm call's included)."""

import time

import torch

STEPS, EOS, MEMORY, HIDDEN = 96, 0, 256, 512
# Longer than the call clock's loop waits between its calls (each input made, and the harness's operators checked,
# once the call before returned: a few ms; before issue 76 the calls came back to back, and 2 ms told them apart).
PAUSE_S = 0.01
last = [0.0]


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


def decode(w: dict, prompts: torch.Tensor) -> torch.Tensor:
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


def forward(w: dict, prompts: torch.Tensor) -> torch.Tensor:
    back_to_back = time.perf_counter() - last[0] < PAUSE_S
    ended = torch.full((prompts.shape[0], STEPS), EOS, dtype=torch.long, device=prompts.device)
    out = ended if back_to_back else decode(w, prompts)
    last[0] = time.perf_counter()
    return out
