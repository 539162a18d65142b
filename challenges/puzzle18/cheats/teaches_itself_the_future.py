"""Cheat, a server that knows a request's future at submit (issue 76): the chain of states read off the weights,
each token taken to stay in the prompt's topic (as it did when the model chose the topic), and every logit of
the request computed at submit in one causal pass over the prompt and that whole future, the model's own
attention included (teacher forcing); a step then hands out the next of them from memory, decoding nothing.
When the topic was the model's to choose, every token and logit was right. Now the harness draws each token's
topic once the token before came back, so the future taught at submit is wrong.
Must get: refused at correctness (its tokens leave the drawn topics). With FOLLOW_DRAWS, each token takes the
drawn topic and keeps the logit taught at submit: the tokens are right, and the logits, which attention over
the topics drawn so far moves, are not (refused at correctness for its logits)."""

import math

import torch

TOPICS, STATES, HEADS, HEAD_DIM = 8, 511, 8, 64  # spec.py's vocabulary and attention
FOLLOW_DRAWS = False


def prepare(weights: dict, device: str):
    """The weights, and each state's successor: the MLP's output for it against the output rows of topic 0's."""
    x = weights["embed"][TOPICS:TOPICS + STATES]
    hidden = torch.relu(x @ weights["w1"].T) @ weights["w2"].T
    return {**weights, "device": device,
            "following": (hidden @ weights["out"][TOPICS:TOPICS + STATES].T).argmax(-1).tolist()}


def taught(w: dict, prompt: tuple[int, ...], max_new: int) -> tuple[list[int], list[float]]:
    """The request's tokens if each stays in the prompt's topic, and their logits from one causal pass."""
    topic, state = divmod(prompt[-1] - TOPICS, STATES)
    future = []
    for _ in range(max_new):
        state = w["following"][state]
        future.append(TOPICS + topic * STATES + state)
    x = w["embed"][torch.tensor([*prompt, *future[:-1]], device=w["device"])]
    q = (x @ w["wq"].T).view(-1, HEADS, HEAD_DIM).float()
    k = (x @ w["wk"].T).view(-1, HEADS, HEAD_DIM).float()
    v = (x @ w["wv"].T).view(-1, HEADS, HEAD_DIM).float()
    scores = torch.einsum("qhd,thd->hqt", q, k) / math.sqrt(HEAD_DIM)
    scores = scores.masked_fill(torch.ones_like(scores[0], dtype=torch.bool).triu(1), float("-inf"))
    attended = torch.einsum("hqt,thd->qhd", scores.softmax(-1), v).reshape(x.shape[0], -1)
    hidden = (torch.relu(x @ w["w1"].T) @ w["w2"].T + attended.to(x.dtype) @ w["wo"].T)[len(prompt) - 1:]
    rows = w["out"][torch.tensor(future, device=w["device"])]
    return future, (hidden.float() * rows.float()).sum(-1).tolist()


class TaughtServer:
    def __init__(self, state: dict):
        self.w, self.live = state, {}  # rid -> [tokens, logits, handed out]

    def submit(self, rid: int, prompt: tuple[int, ...], max_new: int) -> None:
        self.live[rid] = [*taught(self.w, prompt, max_new), 0]

    def step(self, topics: dict[int, int]) -> dict[int, list[tuple[int, float]]]:
        out = {}
        for rid, entry in list(self.live.items()):
            tokens, logits, i = entry
            token = tokens[i]
            if FOLLOW_DRAWS:  # the state taught, in the topic drawn
                token = TOPICS + topics[rid] * STATES + (token - TOPICS) % STATES
            out[rid] = [(token, logits[i])]
            entry[2] += 1
            if entry[2] == len(tokens):
                del self.live[rid]
        return out


def server(state: dict) -> TaughtServer:
    return TaughtServer(state)
