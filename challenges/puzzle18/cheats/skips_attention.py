"""Cheat, a server that does other work than the model's (issue 37): continuous batching as the reference does it,
but no attention and no KV cache. The topic, which only attention over the cache finds, is read from the prompt
on the host and added where head 0 would add it; the MLP and the output layer run for real, so every token is
right and comes with a logit. A server of this kind read gold at 9.2x when only the tokens were checked.
Must get: refused at correctness (the random heads' attention over every position moves each logit by about 2%,
and this server's logits lack it)."""

import math

import torch

SLOTS = 64
TOPICS, STATES, GROUP, TOPIC_BONUS = 8, 511, 512 - 16 + 2, 200.0  # spec.py's: the vocabulary, the topic's
# one-hot dimensions, head 0's bonus


def prepare(weights: dict, device: str):
    return {**weights, "device": device}


class NoCacheServer:
    def __init__(self, state: dict):
        self.w, self.device = state, state["device"]
        self.queue: list[tuple[int, tuple[int, ...], int]] = []
        self.live: dict[int, list] = {}  # rid: [current token, topic, tokens left]

    def submit(self, rid: int, prompt: tuple[int, ...], max_new: int) -> None:
        self.queue.append((rid, prompt, max_new))

    def step(self, drawn: dict[int, int]) -> dict[int, list[tuple[int, float]]]:
        while self.queue and len(self.live) < SLOTS:
            rid, prompt, max_new = self.queue.pop(0)
            self.live[rid] = [prompt[-1], prompt[0], max_new]  # a prompt's first token is its topic
        if not self.live:
            return {}
        rids = list(self.live)
        current = torch.tensor([self.live[r][0] for r in rids], device=self.device)
        topics = torch.tensor([self.live[r][1] for r in rids], device=self.device)
        x = self.w["embed"][current]
        hidden = torch.relu(x @ self.w["w1"].T) @ self.w["w2"].T
        hidden[torch.arange(len(rids), device=self.device), GROUP + topics] += math.sqrt(TOPIC_BONUS)
        pick = torch.tensor([drawn[r] for r in rids], device=self.device)
        rows = torch.arange(len(rids), device=self.device)
        logits = (hidden @ self.w["out"].T)[:, TOPICS:].view(-1, TOPICS, STATES)[rows, pick]
        nxt = TOPICS + pick * STATES + logits.argmax(-1)  # the best of the drawn topic
        logit = (hidden.float() * self.w["out"][nxt].float()).sum(-1)
        out = {}
        for rid, token, value in zip(rids, nxt.tolist(), logit.tolist()):
            out[rid] = [(token, value)]
            self.live[rid][0] = token
            self.live[rid][2] -= 1
            if self.live[rid][2] == 0:
                del self.live[rid]
        return out


def server(state: dict) -> NoCacheServer:
    return NoCacheServer(state)
