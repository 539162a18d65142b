"""Cheat, a server that does other work than the model's (issue 37): the chain of states read off the weights once,
then each step one gather on the GPU for every live request's next state and one copy back. The model never runs
after prepare(), yet NVML sees a kernel a step: the busy-time floor measures the GPU's busy time, not what its
kernels compute. Every token is right, without the logit a token of the model comes with. Must get: refused at
correctness (tokens without their logits)."""

import torch

TOPICS, STATES = 8, 511  # spec.py's vocabulary: a topic token each, then (state, topic) tokens


def prepare(weights: dict, device: str):
    """Each state's successor: the MLP's output for it against the output rows of topic 0's states."""
    x = weights["embed"][TOPICS:TOPICS + STATES]
    hidden = torch.relu(x @ weights["w1"].T) @ weights["w2"].T
    return {"following": (hidden @ weights["out"][TOPICS:TOPICS + STATES].T).argmax(-1), "device": device}


class GatherServer:
    def __init__(self, state: dict):
        self.following, self.device = state["following"], state["device"]
        self.live = {}  # rid -> [topic, state, tokens left]

    def submit(self, rid: int, prompt: tuple[int, ...], max_new: int) -> None:
        self.live[rid] = [*divmod(prompt[-1] - TOPICS, STATES), max_new]  # [topic, state, left]

    def step(self, topics: dict[int, int]) -> dict[int, list[int]]:
        if not self.live:
            return {}
        rids = list(self.live)
        states = torch.tensor([self.live[r][1] for r in rids], device=self.device)
        out = {}
        for rid, state in zip(rids, self.following[states].tolist()):
            entry = self.live[rid]
            entry[1], entry[2] = state, entry[2] - 1
            out[rid] = [TOPICS + topics[rid] * STATES + state]  # the drawn topic's
            if entry[2] == 0:
                del self.live[rid]
        return out


def server(state: dict) -> GatherServer:
    return GatherServer(state)
