"""Inputs for puzzle4: greedy decoding of a batch of 16 sequences, up to 96 steps, stopping at end-of-sequence.

The model is small on purpose (a step is a dozen kernels of a few microseconds). Its tokens stand in a line,
ORDER (ORDER[0] is end-of-sequence, EOS), and from its place k a token goes on to one of two nearer the end:
place k - 1 or place k - 3 (STRIDES). Which one, the model's memory decides: each sequence's memory (MEMORY
floats) is written by every step, from its hidden state and the memory before it, and read back into the next
step's input; the output projection's rows for the two next tokens score the same on a step's hidden state
without its memory (the rows solved so: `_rows_scoring_alike`), and the last eighth of its dimensions, where
the memory's read-back alone writes, breaks the tie. So the next token is known only once the step before it has run,
from a prompt of 7 tokens drawn at grade time before the one decoding starts from: where a sequence goes, and
when the batch ends, is found by decoding it. Any other token trails the two by about 150 or more.

Two next tokens can score nearly alike, and another order of sums may pick the other: a call's tokens are judged
along their own path (judge, as tutor.harness.worker.Worker.judge runs it), each choice's logit against the best of
its step, a choice within TIE of the best counting as the best. The memory's recurrence is a rotation (orthogonal,
gain 1), so the prompt is never forgotten (tests/test_puzzle4.py).
"""

import torch

VOCAB, HIDDEN, FFN, MEMORY, BATCH, STEPS, PROMPT = 4096, 512, 2048, 256, 16, 96, 8
EOS = 0
STRIDES = (1, 3)  # from place k a token goes on to place k - 1 or k - 3: a call's length is found by decoding
_INPUT_STREAM = 1 << 40
# The line: ORDER[k] stands k places from EOS. Fixed, so inputs can be drawn by place; nothing secret.
ORDER = torch.cat([torch.tensor([EOS]), 1 + torch.randperm(VOCAB - 1, generator=torch.Generator().manual_seed(4))])
PLACE = torch.empty(VOCAB, dtype=torch.long)
PLACE[ORDER] = torch.arange(VOCAB)
WRITE_GAIN = 0.5  # the hidden state's share of the memory's next value, against the rotated memory's
READ_GAIN = 0.2  # the memory's share of a step's input
LEAD = 768.0  # a next token's logit on its step's hidden state without the memory: any other's is near 0
BRANCH_GAIN = 6.0  # how far the memory moves each logit: the two next tokens part by about 35 on average
TIE = 16.0  # the judge: a choice this close to its step's best is as good (bf16's rounding near LEAD is 4)
NEAREST, FARTHEST = 40, 130  # the place the batch's farthest sequence starts from: calls end at steps 25-70


def make_weights(seed: int, device: str) -> dict:
    """bf16 embed, w1, w2, out (the step); fp32 mix (the memory's read-back, then its rotation) and write (the
    memory)."""
    g = torch.Generator().manual_seed(seed)
    choice = HIDDEN // 8  # the memory's own dimensions of the hidden state: embed and the MLP write none of them
    embed = torch.randn(VOCAB, HIDDEN, generator=g)
    embed[:, -choice:] = 0
    w1 = torch.randn(FFN, HIDDEN, generator=g) * HIDDEN**-0.5
    w2 = torch.randn(HIDDEN, FFN, generator=g) * FFN**-0.5 * 2  # the MLP's output outweighs the embedding
    w2[-choice:] = 0
    out = _rows_scoring_alike(embed, _hidden_without_memory(embed, w1, w2), g)
    # The tie-break: read from the memory's dimensions alone, scaled so that it moves a logit as much at any size.
    out[:, -choice:] = torch.randn(VOCAB, choice, generator=g) * BRANCH_GAIN * 8 / choice**0.5 * 16 / MEMORY**0.5
    step = {k: v.to(torch.bfloat16) for k, v in {"embed": embed, "out": out, "w1": w1, "w2": w2}.items()}
    recur, _ = torch.linalg.qr(torch.randn(MEMORY, MEMORY, generator=g))
    read = torch.randn(MEMORY, HIDDEN, generator=g) * READ_GAIN
    memory = {"mix": torch.cat([read, recur], dim=1),
              "write": torch.randn(HIDDEN, MEMORY, generator=g) * WRITE_GAIN / (HIDDEN**0.5 * 22.6)}
    return {k: v.to(device) for k, v in {**step, **memory}.items()}


def next_places(k: int) -> list[int]:
    """The places a token at place k goes on to: EOS only to itself, places 1 and 2 only to the one before."""
    if k == 0:
        return [0]
    return [k - stride for stride in STRIDES if k - stride >= 0]


def _hidden_without_memory(embed: torch.Tensor, w1: torch.Tensor, w2: torch.Tensor) -> torch.Tensor:
    """Each token's hidden state as the bf16 step makes it with an empty memory."""
    bf16 = lambda t: t.to(torch.bfloat16)  # noqa: E731
    h = bf16(embed)
    return torch.addmm(h, torch.relu(h @ bf16(w1).T), bf16(w2).T).float()


def _rows_scoring_alike(embed: torch.Tensor, hidden: torch.Tensor, g: torch.Generator) -> torch.Tensor:
    """The output projection: for the token at each place, the least row that scores exactly LEAD on the hidden
    state of each token that goes on to it (its comers: two, or end-of-sequence's three) and nothing on their
    embeddings, nor on the direction every hidden state shares: so each comer scores its two next tokens alike
    with an empty memory, and only a step that runs the MLP finds them."""
    comers: dict[int, list[int]] = {}
    for k in range(VOCAB):
        for p in next_places(k):
            comers.setdefault(p, []).append(k)
    shared = hidden.mean(0) / hidden.mean(0).norm()
    out = torch.randn(VOCAB, HIDDEN, generator=g) * 0.05  # a place nobody comes to
    for count in set(map(len, comers.values())):
        places = [p for p, ks in comers.items() if len(ks) == count]
        tokens = ORDER[torch.tensor([comers[p] for p in places])]  # [places, count]
        scored = torch.cat([hidden[tokens], embed[tokens], shared.expand(len(places), 1, HIDDEN)], dim=1)
        wanted = torch.zeros(len(places), 2 * count + 1, 1)
        wanted[:, :count] = LEAD
        mix = torch.linalg.solve(scored @ scored.transpose(1, 2), wanted)
        out[ORDER[torch.tensor(places)]] = (mix.transpose(1, 2) @ scored)[:, 0]
    return out


def step(w: dict, tokens: torch.Tensor, memory: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """One token of each sequence in: the logits of the next (bf16) and the memory after it, as the baseline's
    step makes them."""
    mixed = memory @ w["mix"]
    h = w["embed"][tokens] + mixed[:, :HIDDEN].to(torch.bfloat16)
    h = torch.addmm(h, torch.relu(h @ w["w1"].T), w["w2"].T)
    return h @ w["out"].T, torch.tanh(torch.addmm(mixed[:, HIDDEN:], h.float(), w["write"]))


def make_input(seed: int, device: str) -> torch.Tensor:
    """16 prompts of PROMPT tokens: PROMPT - 1 drawn at random, then the token decoding starts from, the farthest
    of them at a place between NEAREST and FARTHEST."""
    g = torch.Generator().manual_seed(_INPUT_STREAM + seed)
    farthest = int(torch.randint(NEAREST, FARTHEST, (1,), generator=g))
    places = torch.randint(1, farthest + 1, (BATCH,), generator=g)
    places[int(torch.randint(BATCH, (1,), generator=g))] = farthest
    prompts = torch.randint(1, VOCAB, (BATCH, PROMPT - 1), generator=g)
    return torch.cat([prompts, ORDER[places][:, None]], dim=1).to(device)


def judge(weights: dict, prompts: torch.Tensor, tokens: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """Along a decode's own path (`tokens` [BATCH, STEPS], EOS after the batch ended): each step's logit of the
    token chosen and the best logit of that step, [BATCH, STEPS] fp32 each, the memory run along the tokens
    chosen. A choice within TIE of the best scores the best; a token out of the vocabulary, far below it."""
    tokens = tokens.to(prompts.device).long()
    valid = (tokens >= 0) & (tokens < VOCAB)
    tokens = tokens.clamp(0, VOCAB - 1)
    memory = torch.zeros(prompts.shape[0], MEMORY, device=prompts.device)
    for j in range(prompts.shape[1] - 1):
        _, memory = step(weights, prompts[:, j], memory)
    fed = torch.cat([prompts[:, -1:], tokens[:, :-1]], dim=1)
    scored, best = torch.empty(tokens.shape, device=prompts.device), torch.empty(tokens.shape, device=prompts.device)
    # From the first step fed nothing but EOS with nothing but EOS after it, every choice is EOS after EOS: the best.
    ended = (fed == EOS).all(dim=0) & (tokens == EOS).flip(1).cumprod(dim=1).flip(1).all(dim=0)
    last = int(ended.int().argmax()) if bool(ended.any()) else tokens.shape[1]  # one wait, not one a step
    scored[:, last:], best[:, last:] = LEAD, LEAD
    for i in range(last):
        logits, memory = step(weights, fed[:, i], memory)
        logits = logits.float()
        best[:, i] = logits.max(dim=-1).values
        scored[:, i] = logits.gather(1, tokens[:, i:i + 1])[:, 0]
    scored = torch.where(valid, scored, best - 10 * LEAD)
    return torch.where(best - scored <= TIE, best, scored), best


def least_work(l2_bytes: int) -> dict:
    """The least one forward() must do on any GPU (tutor.grading.floor): every input reads its prompt and runs at
    least NEAREST // 3 steps (its farthest sequence going 3 places every step), each 2 FLOPs per weight per
    sequence at the bf16 rate (L2 holds the 7 MB of weights, so no HBM traffic is counted)."""
    weights = 2 * HIDDEN * FFN + VOCAB * HIDDEN
    fewest = NEAREST // max(STRIDES)
    steps = fewest + PROMPT - 1
    return {"flops": 2 * BATCH * weights * steps, "flop_dtype": "bf16",
            "what": f"{PROMPT - 1} prompt steps and {fewest} decode steps of {BATCH} sequences (the fewest "
                    "any input needs) at the bf16 rate"}
