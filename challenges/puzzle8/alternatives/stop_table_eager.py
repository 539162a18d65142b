"""The check on the GPU without graphs: a table marks the stop tokens, each step records which sequences
have just met theirs, and the host asks whether all have ended once every CHUNK steps. No search, no
read of the tokens, one wait per chunk; the steps' kernels are launched one by one.
"""

import torch

STEPS, MEMORY, HIDDEN, CHUNK, PAD = 64, 256, 1024, 8, -1


def prepare(weights: dict, device: str):
    index = {word: t for t, word in enumerate(weights["words"])}
    is_stop = torch.zeros(len(weights["words"]), dtype=torch.bool, device=device)
    is_stop[[index[word] for word in weights["stop_words"]]] = True
    return {"w": weights, "is_stop": is_stop, "steps": torch.arange(STEPS, device=device)}


def step(w: dict, tokens: torch.Tensor, memory: torch.Tensor):
    """One token of each sequence in: the next token and the memory after it."""
    mixed = memory @ w["mix"]  # the memory's read-back and its rotation, in one product
    h = w["embed"][tokens] + mixed[:, :HIDDEN].to(torch.bfloat16)
    h = torch.addmm(h, torch.relu(h @ w["w1"].T), w["w2"].T)
    tokens = (h @ w["out"].T).argmax(dim=-1)
    memory = torch.tanh(torch.addmm(mixed[:, HIDDEN:], h.float(), w["write"]))
    return tokens, memory


def read_prompt(w: dict, prompts: torch.Tensor) -> torch.Tensor:
    """The memory the prompt leaves (its choices unread): decoding starts from it and the prompt's last token."""
    memory = torch.zeros(prompts.shape[0], MEMORY, device=prompts.device)
    for j in range(prompts.shape[1] - 1):
        _, memory = step(w, prompts[:, j], memory)
    return memory


def forward(s: dict, prompts: torch.Tensor) -> torch.Tensor:
    memory, tokens = read_prompt(s["w"], prompts), prompts[:, -1]
    out = torch.full((prompts.shape[0], STEPS), PAD, device=prompts.device)
    ends = torch.full((prompts.shape[0],), STEPS, dtype=torch.long, device=prompts.device)
    for i in range(STEPS):
        tokens, memory = step(s["w"], tokens, memory)
        out[:, i] = tokens
        ends.masked_fill_(s["is_stop"][tokens] & (ends == STEPS), i)
        if (i + 1) % CHUNK == 0 and bool((ends < STEPS).all()):  # one wait a chunk
            break
    return out.masked_fill(s["steps"] > ends[:, None], PAD)
