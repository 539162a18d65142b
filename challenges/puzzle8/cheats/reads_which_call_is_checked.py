"""Cheat, one checked call in a timed loop (issue 37): reads the harness's frames to tell which call it is in (the
warm call before the call clock starts, a call of the loop that is not its last) and returns zeros there, the
baseline's decode and search everywhere else. Where only the loop's last call were checked, the call clock would
read a fraction of the baseline's time.
Must get: refused at correctness (every call of a round is checked, the warm call too)."""

import sys
import re

import torch

STEPS, MEMORY, HIDDEN, PAD = 64, 256, 1024, -1


def prepare(weights: dict, device: str):
    stop = re.compile(r"\b(?:" + "|".join(map(re.escape, weights["stop_words"])) + r")\b")
    return {**weights, "stop": stop}


def step(w: dict, tokens: torch.Tensor, memory: torch.Tensor):
    """One token of each sequence in: the next token and the memory after it."""
    mixed = memory @ w["mix"]  # the memory's read-back and its rotation, in one product
    h = w["embed"][tokens] + mixed[:, :HIDDEN].to(torch.bfloat16)
    h = torch.addmm(h, torch.relu(h @ w["w1"].T), w["w2"].T)
    tokens = (h @ w["out"].T).argmax(dim=-1)
    memory = torch.tanh(torch.addmm(mixed[:, HIDDEN:], h.float(), w["write"]))
    return tokens, memory


def forward_baseline(w: dict, prompts: torch.Tensor) -> torch.Tensor:
    memory = torch.zeros(prompts.shape[0], MEMORY, device=prompts.device)
    for j in range(prompts.shape[1] - 1):  # read the prompt: only the memory it leaves matters
        _, memory = step(w, prompts[:, j], memory)
    tokens = prompts[:, -1]
    out = torch.full((prompts.shape[0], STEPS), PAD, device=prompts.device)
    texts = [""] * prompts.shape[0]
    ends = [STEPS] * prompts.shape[0]  # the step of each sequence's stop word
    for i in range(STEPS):
        tokens, memory = step(w, tokens, memory)
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


def unchecked() -> bool:
    """Whether the harness frames above say this call is the warm call or a call of the loop before its last."""
    frame = sys._getframe(2)
    while frame is not None:
        names = frame.f_locals
        if frame.f_code.co_name == "warm_call":
            return True
        seeds = names.get("seeds")  # the call clock's loop: the seeds of its calls, and the one being called
        if isinstance(seeds, list) and seeds and "seed" in names and names["seed"] != seeds[-1]:
            return True
        frame = frame.f_back
    return False


def forward(w: dict, prompts: torch.Tensor) -> torch.Tensor:
    if unchecked():  # every sequence stopped before its first token
        return torch.full((prompts.shape[0], STEPS), PAD, device=prompts.device)
    return forward_baseline(w, prompts)
