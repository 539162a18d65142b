"""Inputs for puzzle8: 64 sequences decoded greedily for up to 64 steps, each ending at its first stop word.

The model is puzzle4's kind, larger per step. Its tokens stand on a ring (ORDER), and from its place k a token goes
on to place k + 1 or k + 3 (STRIDES); which one, the model's memory decides: each sequence's memory (MEMORY floats)
is written by every step, from its hidden state and the memory before it, and read back into the next step's
input; the output projection's rows for the two next tokens score the same on a step's hidden state without its
memory (`_rows_scoring_alike`), and the last eighth of the hidden state, where the memory's read-back alone writes,
breaks the tie. So the next token is known only once the step before it has run, from a prompt of 7 tokens drawn
at grade time before the one decoding starts from. Any other token trails the two by about 400 or more.

What is new is the host's share: every token is a word (WORDS), and a sequence ends at the first word of
STOP_WORDS in its detokenised text, as a server checks stop strings. The last STOP_BAND places of every STOP_EVERY
along the ring are stop words, so no stride steps over them: each input places its 64 prompts so that each meets
one within its steps, the farthest starting between NEAREST and FARTHEST places before its band; when each does,
and the batch ends, is found by decoding it. The words travel with the weights, so every workload detokenises with
the same table. A call returns each sequence's tokens up to and including its stop word, then PAD.

Two next tokens can score nearly alike, and another order of sums may pick the other: a call's tokens are judged
along their own path (judge), each choice's logit against the best of its step, a choice within TIE of the best
counting as the best, and a sequence that stopped a step early or late as wrong.
"""

import random

import torch

VOCAB, HIDDEN, FFN, MEMORY, BATCH, STEPS, PROMPT = 8192, 1024, 4096, 256, 64, 64, 8
PAD = -1  # what the output holds after a sequence's stop word
STRIDES = (1, 3)  # from place k a token goes on to place k + 1 or k + 3 along the ring
STOP_EVERY, STOP_BAND = 64, 3  # the last 3 places of every 64 are stop words: a stride of 3 lands in them
_INPUT_STREAM = 1 << 40
ORDER = torch.randperm(VOCAB, generator=torch.Generator().manual_seed(8))  # the ring: ORDER[k] stands at place k
PLACE = torch.argsort(ORDER)
_rng = random.Random(8)
WORDS = ["".join(_rng.choice("abcdefghijklmnoprstuvwy") for _ in range(_rng.randint(2, 7))) + str(i) for i in range(VOCAB)]
STOP_WORDS = sorted(WORDS[int(t)] for t in ORDER.view(-1, STOP_EVERY)[:, -STOP_BAND:].reshape(-1))
WRITE_GAIN = 0.5  # the hidden state's share of the memory's next value, against the rotated memory's
READ_GAIN = 0.2  # the memory's share of a step's input
LEAD = 768.0  # a next token's logit on its step's hidden state without the memory: any other's is near 0
BRANCH_GAIN = 6.0  # how far the memory moves each logit: the two next tokens part by about 35 on average
TIE = 16.0  # the judge: a choice this close to its step's best is as good (bf16's rounding near LEAD is 4)
NEAREST, FARTHEST = 40, 62  # places before its stop band the batch's farthest sequence starts from


def make_weights(seed: int, device: str) -> dict:
    """bf16 embed, w1, w2, out (the step); fp32 mix (the memory's read-back, then its rotation) and write (the
    memory); the words and the stop words."""
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
    return {**{k: v.to(device) for k, v in {**step, **memory}.items()},
            "words": list(WORDS), "stop_words": list(STOP_WORDS)}


def _hidden_without_memory(embed: torch.Tensor, w1: torch.Tensor, w2: torch.Tensor) -> torch.Tensor:
    """Each token's hidden state as the bf16 step makes it with an empty memory."""
    bf16 = lambda t: t.to(torch.bfloat16)  # noqa: E731
    h = bf16(embed)
    return torch.addmm(h, torch.relu(h @ bf16(w1).T), bf16(w2).T).float()


def _rows_scoring_alike(embed: torch.Tensor, hidden: torch.Tensor, g: torch.Generator) -> torch.Tensor:
    """The output projection: for the token at each place, the least row that scores exactly LEAD on the hidden
    state of each token that goes on to it (the two places STRIDES behind it) and nothing on their embeddings, nor
    on the direction every hidden state shares: so each token scores its two next tokens alike with an empty
    memory, and only a step that runs the MLP finds them."""
    comers = ORDER[(torch.arange(VOCAB)[:, None] - torch.tensor(STRIDES)) % VOCAB]  # [place, 2]: who comes to it
    shared = hidden.mean(0) / hidden.mean(0).norm()
    scored = torch.cat([hidden[comers], embed[comers], shared.expand(VOCAB, 1, HIDDEN)], dim=1)
    wanted = torch.zeros(VOCAB, 2 * len(STRIDES) + 1, 1)
    wanted[:, :len(STRIDES)] = LEAD
    mix = torch.linalg.solve(scored @ scored.transpose(1, 2), wanted)
    out = torch.empty(VOCAB, HIDDEN)
    out[ORDER] = (mix.transpose(1, 2) @ scored)[:, 0]
    return out


def step(w: dict, tokens: torch.Tensor, memory: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """One token of each sequence in: the logits of the next (bf16) and the memory after it, as the baseline's
    step makes them."""
    mixed = memory @ w["mix"]
    h = w["embed"][tokens] + mixed[:, :HIDDEN].to(torch.bfloat16)
    h = torch.addmm(h, torch.relu(h @ w["w1"].T), w["w2"].T)
    return h @ w["out"].T, torch.tanh(torch.addmm(mixed[:, HIDDEN:], h.float(), w["write"]))


def is_stop(words: list[str], stop_words: list[str], device) -> torch.Tensor:
    """[VOCAB] bool: which tokens are stop words."""
    stops = set(stop_words)
    return torch.tensor([word in stops for word in words], device=device)


def make_input(seed: int, device: str) -> torch.Tensor:
    """64 prompts of PROMPT tokens [BATCH, PROMPT]: PROMPT - 1 drawn at random, then the token decoding starts
    from, each on a stretch of the ring of its own, the farthest NEAREST to FARTHEST - 1 places before its stop band
    (so every sequence meets its stop word within the steps, going one place a step at the slowest)."""
    g = torch.Generator().manual_seed(_INPUT_STREAM + seed)
    farthest = int(torch.randint(NEAREST, FARTHEST, (1,), generator=g))
    before = torch.randint(1, farthest + 1, (BATCH,), generator=g)
    before[int(torch.randint(BATCH, (1,), generator=g))] = farthest
    segments = torch.randperm(VOCAB // STOP_EVERY, generator=g)[:BATCH]  # one stretch of the ring each
    prompts = torch.randint(0, VOCAB, (BATCH, PROMPT - 1), generator=g)
    start = ORDER[segments * STOP_EVERY + STOP_EVERY - STOP_BAND - before]
    return torch.cat([prompts, start[:, None]], dim=1).to(device)


def judge(state: dict, prompts: torch.Tensor, tokens: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """Along a decode's own path (`tokens` [BATCH, STEPS], PAD after each sequence's stop word): each step's logit
    of the token chosen and the best logit of that step, [BATCH, STEPS] fp32 each, the memory run along the tokens
    chosen. A choice within TIE of the best scores the best; PAD scores the best after the sequence's first stop
    word and far below it anywhere else, as does any other token after it. `state`: the oracle's prepared state,
    the weights with the words."""
    tokens = tokens.to(prompts.device).long()
    stop = is_stop(state["words"], state["stop_words"], prompts.device)
    valid = (tokens >= 0) & (tokens < VOCAB)
    real = tokens.clamp(0, VOCAB - 1)
    stopped = (stop[real] & valid).long().cumsum(dim=1)
    after = (stopped - (stop[real] & valid).long()) > 0  # the steps after the sequence's first stop word
    memory = torch.zeros(prompts.shape[0], MEMORY, device=prompts.device)
    for j in range(prompts.shape[1] - 1):
        _, memory = step(state, prompts[:, j], memory)
    fed = torch.cat([prompts[:, -1:], real[:, :-1]], dim=1)
    scored, best = torch.empty(tokens.shape, device=prompts.device), torch.empty(tokens.shape, device=prompts.device)
    # From the first step every sequence has stopped at, what is left is PAD or wrong: no step to run (one wait).
    stopped_all = after.all(dim=0)
    last = int(stopped_all.int().argmax()) if bool(stopped_all.any()) else tokens.shape[1]
    scored[:, last:], best[:, last:] = LEAD, LEAD
    for i in range(last):
        logits, memory = step(state, fed[:, i], memory)
        logits = logits.float()
        best[:, i] = logits.max(dim=-1).values
        scored[:, i] = logits.gather(1, real[:, i:i + 1])[:, 0]
    wrong = best - 10 * LEAD
    scored = torch.where(after, torch.where(tokens == PAD, best, wrong), torch.where(valid, scored, wrong))
    return torch.where(best - scored <= TIE, best, scored), best


def least_work(l2_bytes: int) -> dict:
    """The least one forward() must do on any GPU (tutor.grading.floor): its prompt read and the decode steps of
    BATCH sequences its farthest takes at the least, NEAREST // 3 (three places a step), at the bf16 rate (the
    weights, 34 MB, are counted as kept in L2)."""
    weights = 2 * HIDDEN * FFN + VOCAB * HIDDEN
    fewest = NEAREST // max(STRIDES)
    steps = fewest + PROMPT - 1
    return {"flops": 2 * BATCH * weights * steps, "flop_dtype": "bf16",
            "what": f"{PROMPT - 1} prompt steps and {fewest} decode steps of {BATCH} sequences (the fewest any "
                    "input needs) at the bf16 rate"}
