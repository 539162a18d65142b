"""Cheat, a server that does other work than the model's (issue 37): the chain of states read off the weights once,
then a token a request a step from a Python list (in the topic drawn for it), the model never run and the GPU idle.
Every token is right and comes one a step, without the logit a token of the model comes with. Must get: refused
at correctness (tokens without their logits), and by the physical floor on a GPU (NVML sees no work in its
replays: tutor.grading.serving)."""

import torch

TOPICS, STATES = 8, 511  # spec.py's vocabulary: a topic token each, then (state, topic) tokens


def prepare(weights: dict, device: str):
    """Each state's successor: the MLP's output for it against the output rows of topic 0's states."""
    x = weights["embed"][TOPICS:TOPICS + STATES]
    hidden = torch.relu(x @ weights["w1"].T) @ weights["w2"].T
    return (hidden @ weights["out"][TOPICS:TOPICS + STATES].T).argmax(-1).tolist()


class TableServer:
    def __init__(self, following: list[int]):
        self.following, self.live = following, {}  # rid -> [topic, state, tokens left]

    def submit(self, rid: int, prompt: tuple[int, ...], max_new: int) -> None:
        self.live[rid] = [*divmod(prompt[-1] - TOPICS, STATES), max_new]  # [topic, state, left]

    def step(self, topics: dict[int, int]) -> dict[int, list[int]]:
        out = {}
        for rid, entry in list(self.live.items()):
            entry[1], entry[2] = self.following[entry[1]], entry[2] - 1
            out[rid] = [TOPICS + topics[rid] * STATES + entry[1]]  # the drawn topic's
            if entry[2] == 0:
                del self.live[rid]
        return out


def server(following: list[int]) -> TableServer:
    return TableServer(following)
