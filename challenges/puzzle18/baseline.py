"""The decoder's server as it runs today.

When it is idle it takes the requests queued (waiting a little for up to BATCH of them), pads their prompts to
the longest, and decodes them together, a token each a step, until each has all its tokens; then it takes the
next batch.

Each step, the harness gives step() the topic drawn for every request's next token ({rid: topic}); the model
picks the best token of that topic.
"""

import math
import time

import torch

BATCH = 16  # the most requests a batch takes
FILL_WAIT_S = 0.005  # how long the oldest queued request waits for a batch to fill
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


class StaticServer:
    def __init__(self, state: dict):
        self.w, self.device = state, state["device"]
        self.queue: list[tuple[int, tuple[int, ...], int, float]] = []
        self.batch = None

    def submit(self, rid: int, prompt: tuple[int, ...], max_new: int) -> None:
        self.queue.append((rid, prompt, max_new, time.monotonic()))

    def step(self, topics: dict[int, int]) -> dict[int, list[tuple[int, float]]]:
        if self.batch is None and not self._start_batch():
            return {}
        rids, left, current, keys, values, length = self.batch
        drawn = torch.tensor([topics.get(rid, 0) for rid in rids], device=self.device)  # a done row's: any
        nxt, logit = step_tokens(self.w, current, keys, values, length, drawn)
        tokens, logits = nxt.tolist(), logit.tolist()
        out = {}
        for i, rid in enumerate(rids):
            if left[i] > 0:
                out[rid] = [(tokens[i], logits[i])]
                left[i] -= 1
        if max(left) == 0:
            self.batch = None
        else:
            self.batch = (rids, left, nxt, keys, values, length + 1)
        return out

    def _start_batch(self) -> bool:
        if not self.queue or (len(self.queue) < BATCH and time.monotonic() - self.queue[0][3] < FILL_WAIT_S):
            return False
        taken, self.queue = self.queue[:BATCH], self.queue[BATCH:]
        longest = max(len(p) for _, p, _, _ in taken) + max(n for _, _, n, _ in taken)
        n = len(taken)
        keys = torch.zeros(n, longest, HEADS, HEAD_DIM, dtype=torch.bfloat16, device=self.device)
        values = torch.zeros_like(keys)
        # Prefill: every prompt's tokens but its last into the cache (one projection for the batch), padded at
        # the end to the longest prompt; the last goes in as the first decode step's current token.
        width = max(len(p) for _, p, _, _ in taken) - 1
        if width:
            padded = torch.zeros(n, width, dtype=torch.long)
            for i, (_, p, _, _) in enumerate(taken):
                padded[i, :len(p) - 1] = torch.tensor(p[:-1])
            x = self.w["embed"][padded.to(self.device)]
            keys[:, :width] = (x @ self.w["wk"].T).view(n, width, HEADS, HEAD_DIM)
            values[:, :width] = (x @ self.w["wv"].T).view(n, width, HEADS, HEAD_DIM)
        length = torch.tensor([len(p) - 1 for _, p, _, _ in taken], device=self.device)
        current = torch.tensor([p[-1] for _, p, _, _ in taken], device=self.device)
        self.batch = ([r for r, _, _, _ in taken], [m for _, _, m, _ in taken], current, keys, values, length)
        return True


def server(state: dict) -> StaticServer:
    return StaticServer(state)
