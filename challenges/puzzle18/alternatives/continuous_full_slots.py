"""Continuous batching, the simplest way: every step admits what has arrived into free slots and frees what
has finished, and runs over every slot and every position of the cache (a free slot's row and the positions
past a sequence's end are masked, not skipped). Nothing waits; every step pays for the whole cache.
"""

import math
import time

import torch

SLOTS = 64  # requests decoded together at most
CONTEXT = 4096  # the longest prompt plus output a slot holds
HEADS, HEAD_DIM = 8, 64
TOPICS, STATES = 8, 511  # the vocabulary: 8 topic tokens, then each topic's 511 state tokens


def prepare(weights: dict, device: str):
    return {**weights, "device": device}


def pick(logits: torch.Tensor, topics: torch.Tensor) -> torch.Tensor:
    """Each row's next token: the best of its logits [B, VOCAB] among the tokens of its drawn topic (topics [B])."""
    rows = torch.arange(logits.shape[0], device=logits.device)
    return TOPICS + topics * STATES + logits[:, TOPICS:].view(-1, TOPICS, STATES)[rows, topics].argmax(-1)


def step_tokens(w: dict, current: torch.Tensor, keys: torch.Tensor, values: torch.Tensor,
                length: torch.Tensor, topics: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """One decode step for a batch: each row's current token (its K and V are written at `length`), attention
    over its cache, the MLP, the next token (the best in its drawn topic) and its logit (in fp32).
    keys/values [B, T, HEADS, HEAD_DIM]; length, topics [B]."""
    b = torch.arange(current.shape[0], device=current.device)
    x = w["embed"][current]
    keys[b, length] = (x @ w["wk"].T).view(-1, HEADS, HEAD_DIM)
    values[b, length] = (x @ w["wv"].T).view(-1, HEADS, HEAD_DIM)
    q = (x @ w["wq"].T).view(-1, HEADS, HEAD_DIM)
    scores = torch.einsum("bhd,bthd->bht", q.float(), keys.float()) / math.sqrt(HEAD_DIM)
    past = torch.arange(keys.shape[1], device=current.device)[None, :] <= length[:, None]  # padding masked
    scores = scores.masked_fill(~past[:, None, :], float("-inf"))
    attended = torch.einsum("bht,bthd->bhd", scores.softmax(-1), values.float()).reshape(x.shape[0], -1)
    hidden = torch.relu(x @ w["w1"].T) @ w["w2"].T + attended.to(x.dtype) @ w["wo"].T
    nxt = pick(hidden @ w["out"].T, topics)
    return nxt, (hidden.float() * w["out"][nxt].float()).sum(-1)


class ContinuousServer:
    def __init__(self, state: dict):
        self.w, self.device = state, state["device"]
        self.queue: list[tuple[int, tuple[int, ...], int]] = []
        self.keys = torch.zeros(SLOTS, CONTEXT, HEADS, HEAD_DIM, dtype=torch.bfloat16, device=self.device)
        self.values = torch.zeros_like(self.keys)
        self.rid: list[int | None] = [None] * SLOTS
        self.left = [0] * SLOTS
        self.length = torch.zeros(SLOTS, dtype=torch.long, device=self.device)
        self.current = torch.zeros(SLOTS, dtype=torch.long, device=self.device)

    def submit(self, rid: int, prompt: tuple[int, ...], max_new: int) -> None:
        self.queue.append((rid, prompt, max_new))

    def step(self, topics: dict[int, int]) -> dict[int, list[tuple[int, float]]]:
        self._admit()
        used = [i for i, r in enumerate(self.rid) if r is not None]
        if not used:
            return {}
        rows, span = SLOTS, CONTEXT
        drawn = torch.tensor([topics.get(r, 0) for r in self.rid[:rows]], device=self.device)  # a free slot's: any
        nxt, logit = step_tokens(self.w, self.current[:rows], self.keys[:rows, :span], self.values[:rows, :span],
                                 self.length[:rows], drawn)
        self.current[:rows] = nxt
        self.length[torch.tensor(used, device=self.device)] += 1  # a free slot stays at 0 until it is refilled
        tokens, logits = nxt.tolist(), logit.tolist()
        out = {}
        for i in used:
            out[self.rid[i]] = [(tokens[i], logits[i])]
            self.left[i] -= 1
            if self.left[i] == 0:
                self.rid[i] = None
                self.length[i] = 0
        return out

    def _admit(self) -> None:
        while self.queue and None in self.rid:
            slot = self.rid.index(None)
            rid, prompt, max_new = self.queue.pop(0)
            if len(prompt) + max_new > CONTEXT:
                raise ValueError(f"request {rid} needs {len(prompt) + max_new} positions; a slot holds {CONTEXT}")
            if len(prompt) > 1:  # prefill: the prompt but its last token into the slot's cache
                x = self.w["embed"][torch.tensor(prompt[:-1], device=self.device)]
                self.keys[slot, :len(prompt) - 1] = (x @ self.w["wk"].T).view(-1, HEADS, HEAD_DIM)
                self.values[slot, :len(prompt) - 1] = (x @ self.w["wv"].T).view(-1, HEADS, HEAD_DIM)
            self.rid[slot], self.left[slot] = rid, max_new
            self.length[slot], self.current[slot] = len(prompt) - 1, prompt[-1]


def server(state: dict) -> ContinuousServer:
    return ContinuousServer(state)
