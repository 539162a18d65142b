"""A cheat the floor cannot tell (MEASUREMENTS.md): the chain read off the weights once, then each step one
gather on the GPU for every live request's next state and one copy back. The model never runs after
prepare(), yet NVML sees a kernel a step: a serving grade's floor measures the GPU's busy time, not what its
kernels compute, and this cheat keeps it busy about a fifth as long as the reference does. Must get: refused;
the busy-time floor refuses it today (MEASUREMENTS.md), and issue 37 asks for a check of the model's own work."""

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
        self.live[rid] = [*divmod(prompt[-1] - TOPICS, STATES), max_new]

    def step(self) -> dict[int, list[int]]:
        if not self.live:
            return {}
        rids = list(self.live)
        states = torch.tensor([self.live[r][1] for r in rids], device=self.device)
        out = {}
        for rid, state in zip(rids, self.following[states].tolist()):
            entry = self.live[rid]
            entry[1], entry[2] = state, entry[2] - 1
            out[rid] = [TOPICS + entry[0] * STATES + state]
            if entry[2] == 0:
                del self.live[rid]
        return out


def server(state: dict) -> GatherServer:
    return GatherServer(state)
