"""Inputs for puzzle4: greedy decoding of a batch of 16 sequences, up to 96 steps, stopping at end-of-sequence.

The model is small on purpose (a step is a dozen kernels of a few microseconds) and built so that greedy
choices never hang on rounding: each row of its output projection is the MLP's output for one token,
relabelled by a successor map, so the right next token leads any other by about 240 or more in its logit,
and only a step that runs the MLP finds it. Every token reaches end-of-sequence (token 0) in as many steps
as its place in the chain; each input draws its 16 prompts so that the whole batch finishes somewhere
between a quarter and three quarters of the way through the 96 steps.

A memory of everything read so far makes each step depend on the whole history, not on its token alone
(a token's successor alone could be tabulated once in prepare() and decoding answered by lookup): each
sequence's memory (MEMORY floats) is written by every step, from its hidden state and the memory before
it, and read back into the next step's input. It never changes a choice (its share of any logit is a few
units against a lead of 240), but each token's score is read from it (a linear head), and it starts from
the prompt, 7 tokens drawn at grade time before the one decoding starts from. The memory's recurrence is a
rotation (orthogonal, gain 1), so the prompt is never forgotten; fp32 throughout, so honest orders of sums
move the scores by under 0.5% (tests/test_puzzle4.py).
"""

import torch

VOCAB, HIDDEN, FFN, MEMORY, BATCH, STEPS, PROMPT = 4096, 512, 2048, 256, 16, 96, 8
EOS = 0
_INPUT_STREAM = 1 << 40
# The chain: ORDER[k] is k steps from EOS. Fixed, so inputs can be drawn by distance; nothing secret.
ORDER = torch.cat([torch.tensor([EOS]), 1 + torch.randperm(VOCAB - 1, generator=torch.Generator().manual_seed(4))])
WRITE_GAIN = 0.5  # the hidden state's share of the memory's next value, against the rotated memory's
READ_GAIN = 0.2  # the memory's share of a step's input: the choices keep a lead of 240 (tests)


def make_weights(seed: int, device: str) -> dict:
    """bf16 embed, w1, w2, out (the step); fp32 mix (the memory's read-back, then its rotation), write, gate
    (the memory)."""
    g = torch.Generator().manual_seed(seed)
    embed = torch.randn(VOCAB, HIDDEN, generator=g)
    w1 = torch.randn(FFN, HIDDEN, generator=g) * HIDDEN**-0.5
    w2 = torch.randn(HIDDEN, FFN, generator=g) * FFN**-0.5 * 2  # the MLP's output outweighs the embedding
    rows = successor_rows(embed, w1, w2)
    out = torch.empty_like(embed)
    out[ORDER[:-1]] = rows[ORDER[1:]]  # logits peak at the successor: out[successor(t)] = the MLP's output for t
    out[ORDER[-1]] = torch.randn(HIDDEN, generator=g)  # the chain's far end is nobody's successor
    out[EOS] = rows[EOS] + out[EOS]  # EOS follows itself: finished sequences stay finished
    step = {k: v.to(torch.bfloat16) for k, v in {"embed": embed, "out": out, "w1": w1, "w2": w2}.items()}
    recur, _ = torch.linalg.qr(torch.randn(MEMORY, MEMORY, generator=g))
    read = torch.randn(MEMORY, HIDDEN, generator=g) * READ_GAIN
    memory = {"mix": torch.cat([read, recur], dim=1),
              # the scale chosen by a CPU sweep: the choices keep their lead and the scores read the memory (tests)
              "write": torch.randn(HIDDEN, MEMORY, generator=g) * WRITE_GAIN / (HIDDEN**0.5 * 22.6),
              "gate": torch.randn(MEMORY, generator=g) / MEMORY**0.5}
    return {k: v.to(device) for k, v in {**step, **memory}.items()}


def successor_rows(embed: torch.Tensor, w1: torch.Tensor, w2: torch.Tensor) -> torch.Tensor:
    """Each token's MLP output as the bf16 step computes it, less the part every token shares, scaled to
    sqrt(HIDDEN): the output projection's row for a token's successor, so the MLP decides the choice."""
    bf16 = lambda t: t.to(torch.bfloat16).float()  # noqa: E731
    mlp = torch.relu(bf16(embed) @ bf16(w1).T) @ bf16(w2).T
    mlp = mlp - mlp.mean(0)
    return mlp * (HIDDEN**0.5 / mlp.norm(dim=1, keepdim=True))


def make_input(seed: int, device: str) -> torch.Tensor:
    """16 prompts of PROMPT tokens: PROMPT - 1 drawn at random, then the token decoding starts from, placed so
    that the longest sequence finishes between step 24 and step 72."""
    g = torch.Generator().manual_seed(_INPUT_STREAM + seed)
    longest = int(torch.randint(STEPS // 4, 3 * STEPS // 4, (1,), generator=g))
    distances = torch.randint(1, longest + 1, (BATCH,), generator=g)
    distances[int(torch.randint(BATCH, (1,), generator=g))] = longest
    prompts = torch.randint(1, VOCAB, (BATCH, PROMPT - 1), generator=g)
    return torch.cat([prompts, ORDER[distances][:, None]], dim=1).to(device)


def least_work(l2_bytes: int) -> dict:
    """The least one forward() must do on any GPU (tutor.grading.floor): every input reads its prompt and runs
    at least STEPS // 4 steps, each 2 FLOPs per weight per sequence at the bf16 rate (L2 holds the 7 MB of
    weights, so no HBM traffic is counted)."""
    weights = 2 * HIDDEN * FFN + VOCAB * HIDDEN
    steps = STEPS // 4 + PROMPT - 1
    return {"flops": 2 * BATCH * weights * steps, "flop_dtype": "bf16",
            "what": f"{PROMPT - 1} prompt steps and {STEPS // 4} decode steps of {BATCH} sequences (the fewest any "
                    "input needs) at the bf16 rate"}
