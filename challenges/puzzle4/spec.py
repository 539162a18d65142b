"""Inputs for puzzle4: greedy decoding of a batch of 16 sequences, up to 96 steps, stopping at end-of-sequence.

The model is small on purpose (a step is a handful of kernels of a few microseconds) and built so
that greedy choices never hang on rounding: each row of its output projection is the MLP's output for
one token, relabelled by a successor map, so the right next token leads any other by hundreds in its
logit, and only a step that runs the MLP finds it (the embedding alone picks a random token). Every token reaches end-of-sequence (token 0) in as many steps as its
place in the chain; each input draws its 16 prompts so that the whole batch finishes somewhere between
a quarter and three quarters of the way through the 96 steps.
"""

import torch

VOCAB, HIDDEN, FFN, BATCH, STEPS = 4096, 512, 2048, 16, 96
EOS = 0
_INPUT_STREAM = 1 << 40
# The chain: ORDER[k] is k steps from EOS. Fixed, so inputs can be drawn by distance; nothing secret.
ORDER = torch.cat([torch.tensor([EOS]), 1 + torch.randperm(VOCAB - 1, generator=torch.Generator().manual_seed(4))])


def make_weights(seed: int, device: str) -> dict:
    g = torch.Generator().manual_seed(seed)
    embed = torch.randn(VOCAB, HIDDEN, generator=g)
    w1 = torch.randn(FFN, HIDDEN, generator=g) * HIDDEN**-0.5
    w2 = torch.randn(HIDDEN, FFN, generator=g) * FFN**-0.5 * 2  # the MLP's output outweighs the embedding
    rows = successor_rows(embed, w1, w2)
    out = torch.empty_like(embed)
    out[ORDER[:-1]] = rows[ORDER[1:]]  # logits peak at the successor: out[successor(t)] = the MLP's output for t
    out[ORDER[-1]] = torch.randn(HIDDEN, generator=g)  # the chain's far end is nobody's successor
    out[EOS] = rows[EOS] + out[EOS]  # EOS follows itself: finished sequences stay finished
    return {k: v.to(torch.bfloat16).to(device) for k, v in {"embed": embed, "out": out, "w1": w1, "w2": w2}.items()}


def successor_rows(embed: torch.Tensor, w1: torch.Tensor, w2: torch.Tensor) -> torch.Tensor:
    """Each token's MLP output as the bf16 step computes it, less the part every token shares, scaled to
    sqrt(HIDDEN): the output projection's row for a token's successor, so the MLP decides the choice."""
    bf16 = lambda t: t.to(torch.bfloat16).float()  # noqa: E731
    mlp = torch.relu(bf16(embed) @ bf16(w1).T) @ bf16(w2).T
    mlp = mlp - mlp.mean(0)
    return mlp * (HIDDEN**0.5 / mlp.norm(dim=1, keepdim=True))


def make_input(seed: int, device: str) -> torch.Tensor:
    """The last prompt token of each of 16 sequences: the longest finishes between step 24 and step 72."""
    g = torch.Generator().manual_seed(_INPUT_STREAM + seed)
    longest = int(torch.randint(STEPS // 4, 3 * STEPS // 4, (1,), generator=g))
    distances = torch.randint(1, longest + 1, (BATCH,), generator=g)
    distances[int(torch.randint(BATCH, (1,), generator=g))] = longest
    return ORDER[distances].to(device)


def least_work(l2_bytes: int) -> dict:
    """The least one forward() must do on any GPU (tutor.grading.floor): every input runs at least
    STEPS // 4 steps, each 2 FLOPs per weight per sequence at the bf16 rate (L2 holds the 6 MB of
    weights, so no HBM traffic is counted)."""
    weights = 2 * HIDDEN * FFN + VOCAB * HIDDEN
    return {"flops": 2 * BATCH * weights * (STEPS // 4), "flop_dtype": "bf16",
            "what": f"{STEPS // 4} decode steps of {BATCH} sequences (the fewest any input needs) at the bf16 rate"}
