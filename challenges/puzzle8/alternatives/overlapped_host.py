"""Keep the detokenise-and-search on the host, off the critical path: launch step i, then copy its
tokens to pinned memory behind an event, and only then do the host's work for step i-1, whose tokens
have landed while the GPU ran step i. The GPU never waits for the host; the loop ends one step after
the last stop word (that step's tokens are masked like any after a stop).
"""

import re

import torch

STEPS, PAD = 64, -1


def prepare(weights: dict, device: str):
    stop = re.compile(r"\b(?:" + "|".join(map(re.escape, weights["stop_words"])) + r")\b")
    return {"w": weights, "stop": stop, "landed": [torch.empty(64, dtype=torch.long, pin_memory=True)
                                                   for _ in range(2)]}


def step(w: dict, tokens: torch.Tensor) -> torch.Tensor:
    h = w["embed"][tokens]
    h = h + torch.relu(h @ w["w1"].T) @ w["w2"].T
    return (h @ w["out"].T).argmax(dim=-1)


def forward(s: dict, tokens: torch.Tensor) -> torch.Tensor:
    w = s["w"]
    out = torch.full((tokens.shape[0], STEPS), PAD, dtype=torch.long, device=tokens.device)
    texts, ends = [""] * tokens.shape[0], [STEPS] * tokens.shape[0]
    behind = None  # (step, event) whose tokens the host reads next
    for i in range(STEPS + 1):
        if i < STEPS:
            tokens = step(w, tokens)
            out[:, i] = tokens
            s["landed"][i % 2].copy_(tokens, non_blocking=True)
            event = torch.cuda.Event()
            event.record()
        if behind is not None:  # step i-1's words, read while step i runs
            j, landed = behind
            landed.synchronize()
            for b, t in enumerate(s["landed"][j % 2].tolist()):
                if ends[b] == STEPS:
                    texts[b] += " " + w["words"][t]
                    if s["stop"].search(texts[b]):
                        ends[b] = j
            if max(ends) < STEPS:
                break
        behind = (i, event)
    after = torch.arange(STEPS, device=out.device) > torch.tensor(ends, device=out.device)[:, None]
    return out.masked_fill(after, PAD)
