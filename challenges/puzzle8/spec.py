"""Inputs for puzzle8: 64 sequences decoded greedily for up to 64 steps, each ending at its first stop word.

The model is puzzle4's kind (greedy choices follow a ring of successors, never rounding: the right
token leads by hundreds in its logit, and it is the MLP that picks it), larger per step. What is new is the
host's share: every token is a word (WORDS), and a sequence ends at the first word of STOP_WORDS in its
detokenised text, as a server checks stop strings. Every 64th token along the ring is a stop word; each input
places its 64 prompts so that each meets one within the steps, the last of them at a step between 16 and 48.
The words travel with the weights, so every workload detokenises with the same table.

The ring is no secret, so the tokens are not what a call returns: each token's score is, read from a memory of
everything decoded so far (puzzle4's): written by every step from its hidden state and the memory before it,
read back into the next step's input, and started from the prompt, 7 tokens drawn at grade time before the one
decoding starts from. It never changes a choice; it makes every score depend on the whole history, so no table
built in prepare() answers a call, and every step of the model has to run. A score is 1 plus the memory's
linear read-out, and 0 after its sequence's stop word: a sequence stopped a step late or early is off by a whole
score. fp32 memory, so honest orders of sums move the scores by far less than the tolerance (tests/test_puzzle8.py).
"""

import random

import torch

VOCAB, HIDDEN, FFN, MEMORY, BATCH, STEPS, PROMPT = 8192, 1024, 4096, 256, 64, 64, 8
PAD = 0.0  # what the output holds after a sequence's stop word
STOP_EVERY = 64
_INPUT_STREAM = 1 << 40
ORDER = torch.randperm(VOCAB, generator=torch.Generator().manual_seed(8))  # the ring: ORDER[k + 1] follows ORDER[k]
_rng = random.Random(8)
WORDS = ["".join(_rng.choice("abcdefghijklmnoprstuvwy") for _ in range(_rng.randint(2, 7))) + str(i) for i in range(VOCAB)]
STOP_WORDS = sorted(WORDS[int(t)] for t in ORDER[STOP_EVERY - 1::STOP_EVERY])
WRITE_GAIN = 0.5  # the hidden state's share of the memory's next value, against the rotated memory's
READ_GAIN = 0.2  # the memory's share of a step's input: the choices keep their lead (tests)


def make_weights(seed: int, device: str) -> dict:
    """bf16 embed, w1, w2, out (the step); fp32 mix (the memory's read-back, then its rotation), write, gate
    (the memory); the words and the stop words."""
    g = torch.Generator().manual_seed(seed)
    embed = torch.randn(VOCAB, HIDDEN, generator=g)
    w1 = torch.randn(FFN, HIDDEN, generator=g) * HIDDEN**-0.5
    w2 = torch.randn(HIDDEN, FFN, generator=g) * FFN**-0.5 * 2  # the MLP's output outweighs the embedding
    out = torch.empty_like(embed)
    out[ORDER.roll(-1)] = successor_rows(embed, w1, w2)[ORDER]  # logits peak at the successor of the MLP's output
    step = {k: v.to(torch.bfloat16) for k, v in {"embed": embed, "out": out, "w1": w1, "w2": w2}.items()}
    recur, _ = torch.linalg.qr(torch.randn(MEMORY, MEMORY, generator=g))
    read = torch.randn(MEMORY, HIDDEN, generator=g) * READ_GAIN
    memory = {"mix": torch.cat([read, recur], dim=1),
              "write": torch.randn(HIDDEN, MEMORY, generator=g) * WRITE_GAIN / (HIDDEN**0.5 * 22.6),
              "gate": torch.randn(MEMORY, generator=g) / MEMORY**0.5}
    return {**{k: v.to(device) for k, v in {**step, **memory}.items()},
            "words": list(WORDS), "stop_words": list(STOP_WORDS)}


def successor_rows(embed: torch.Tensor, w1: torch.Tensor, w2: torch.Tensor) -> torch.Tensor:
    """Each token's MLP output as the bf16 step computes it, less the part every token shares, scaled to
    sqrt(HIDDEN): the output projection's row for a token's successor, so the MLP decides the choice."""
    bf16 = lambda t: t.to(torch.bfloat16).float()  # noqa: E731
    mlp = torch.relu(bf16(embed) @ bf16(w1).T) @ bf16(w2).T
    mlp = mlp - mlp.mean(0)
    return mlp * (HIDDEN**0.5 / mlp.norm(dim=1, keepdim=True))


def make_input(seed: int, device: str) -> torch.Tensor:
    """64 prompts of PROMPT tokens [BATCH, PROMPT]: PROMPT - 1 drawn at random, then the token decoding starts
    from, placed so that sequence b meets its stop word at step stops[b] <= last."""
    g = torch.Generator().manual_seed(_INPUT_STREAM + seed)
    last = int(torch.randint(STEPS // 4, 3 * STEPS // 4 + 1, (1,), generator=g))
    stops = torch.randint(0, last + 1, (BATCH,), generator=g)
    stops[int(torch.randint(BATCH, (1,), generator=g))] = last
    segments = torch.randperm(VOCAB // STOP_EVERY, generator=g)[:BATCH]  # one stretch of the ring each
    prompts = torch.randint(0, VOCAB, (BATCH, PROMPT - 1), generator=g)
    # From ORDER[64 s + 62 - d] the tokens are ORDER[64 s + 63 - d], ..., and step d emits ORDER[64 s + 63], a stop word.
    start = ORDER[segments * STOP_EVERY + STOP_EVERY - 2 - stops]
    return torch.cat([prompts, start[:, None]], dim=1).to(device)


def least_work(l2_bytes: int) -> dict:
    """The least one forward() must do on any GPU (tutor.grading.floor): its prompt read and STEPS // 4 decode
    steps of BATCH sequences at the bf16 rate (the weights, 34 MB, are counted as kept in L2)."""
    weights = 2 * HIDDEN * FFN + VOCAB * HIDDEN
    steps = STEPS // 4 + PROMPT - 1
    return {"flops": 2 * BATCH * weights * steps, "flop_dtype": "bf16",
            "what": f"{PROMPT - 1} prompt steps and {STEPS // 4} decode steps of {BATCH} sequences (the fewest any "
                    "input needs) at the bf16 rate"}
