"""Inputs for puzzle18: a small decoder with a KV cache, and the traces of requests its servers replay.

The vocabulary is 8 topic tokens and, for each topic, 511 state tokens. A request's prompt is a topic token and
then states of that topic. Each next token is drawn as a sampler draws it: the harness draws its topic (one of
TOPICS, uniform) once the token before it came back, and passes it to step() ({rid: topic} for every request
being served, tutor.harness.serving); the model picks the state, its greedy best among the drawn topic's tokens.
So no token is known before the step that makes it (issue 76): not from the weights, the prompt or the trace.
The model is built so that its choices never hang on rounding, in any batch, padding or order of sums, and so
that its KV cache matters:
- the MLP reads a token's state alone and its output picks the successor's state: the output projection's row for
  (successor of s, any topic) is the MLP's output for s, so within the drawn topic that state leads any other by
  hundreds in its logit (a map drawn with the weights: a grade's chain of states is its own);
- attention head 0 scores the topic token 40 above any other position (every query carries a constant that only a
  topic token's key answers), so its softmax leaves e^-40 elsewhere, and its value adds 200 to the logit of a token
  in the prompt's topic;
- the other 7 heads are small random ones whose keys and values read each token's state and its topic: attention
  does real work over every position, and what it adds to each chosen token's logit (about 2%) depends on every
  topic drawn so far.
A server returns each token with its logit, so one that skips attention, or reads the states off the weights and
guesses the topics, gives wrong logits or wrong tokens (tests/test_puzzle18.py). make_trace draws a trace as a
server meets it: Poisson arrivals, prompt and output lengths log-normal (most short, a few long).
"""

import math

import torch

TOPICS, STATES = 8, 511
VOCAB = TOPICS + TOPICS * STATES  # 4096: a topic token for each of 8 topics, then (state, topic) pairs
HIDDEN, FFN, HEADS, HEAD_DIM = 512, 2048, 8, 64
GENERAL = HIDDEN - 16  # the dimensions the MLP reads and writes; the last 16 carry the topic
ONE, TOPIC_KEY, GROUP = GENERAL, GENERAL + 1, GENERAL + 2  # GROUP .. GROUP + 7: which topic
SHARPNESS = 40.0  # head 0's score for the topic token over any other: softmax leaves e^-40 elsewhere
TOPIC_BONUS = 200.0  # a token of the prompt's topic: its logit's lead, once attention has found the topic
TOPIC_READ = 1.0  # the random heads' keys and values read a token's topic as strongly as its state
_SUCCESSOR_STREAM = 1 << 30


def successor(seed: int) -> torch.Tensor:
    """The next state after each state, for the weights of `seed` (make_weights builds them to say it)."""
    return torch.randperm(STATES, generator=torch.Generator().manual_seed(_SUCCESSOR_STREAM + seed))


def token(state, topic):
    """The token id of `state` (an int or a tensor of them) in `topic`."""
    return TOPICS + topic * STATES + state


def make_weights(seed: int, device: str) -> dict:
    """The decoder's bf16 weights: embed [VOCAB, HIDDEN], w1/w2 (the MLP), wq/wk/wv/wo (attention), out."""
    g = torch.Generator().manual_seed(seed)
    base = torch.randn(STATES, GENERAL, generator=g)
    embed = torch.zeros(VOCAB, HIDDEN)
    for t in range(TOPICS):
        embed[t, ONE] = embed[t, TOPIC_KEY] = embed[t, GROUP + t] = 1.0
        embed[token(torch.arange(STATES), t), :GENERAL] = base
        embed[token(torch.arange(STATES), t), GROUP + t] = 1.0  # its topic, which the random heads read
    embed[TOPICS:, ONE] = 1.0
    w1 = torch.zeros(FFN, HIDDEN)
    w1[:, :GENERAL] = torch.randn(FFN, GENERAL, generator=g) * GENERAL**-0.5
    w2 = torch.zeros(HIDDEN, FFN)
    w2[:GENERAL] = torch.randn(GENERAL, FFN, generator=g) * FFN**-0.5 * 2
    noise = 0.045  # the random heads' weights: their scores stay within a few units of 0
    wq = torch.zeros(HEADS * HEAD_DIM, HIDDEN)
    wk = torch.zeros(HEADS * HEAD_DIM, HIDDEN)
    wv = torch.zeros(HEADS * HEAD_DIM, HIDDEN)
    wq[:, :GENERAL] = torch.randn(HEADS * HEAD_DIM, GENERAL, generator=g) * noise
    wk[:, :GENERAL] = torch.randn(HEADS * HEAD_DIM, GENERAL, generator=g) * noise
    wv[HEAD_DIM:, :GENERAL] = torch.randn((HEADS - 1) * HEAD_DIM, GENERAL, generator=g) * noise
    for w in (wk, wv):  # about as much as the state's whole GENERAL part: a history's topics move every head
        w[HEAD_DIM:, GROUP:GROUP + TOPICS] = torch.randn((HEADS - 1) * HEAD_DIM, TOPICS, generator=g) * TOPIC_READ
    sharp = math.sqrt(SHARPNESS * math.sqrt(HEAD_DIM))
    wq[0] = 0.0
    wk[0] = 0.0
    wq[0, ONE], wk[0, TOPIC_KEY] = sharp, sharp
    wv[:TOPICS, GROUP:GROUP + TOPICS] = torch.eye(TOPICS)  # head 0's value: the topic token's one-hot
    wo = torch.zeros(HIDDEN, HEADS * HEAD_DIM)
    wo[GROUP:GROUP + TOPICS, :TOPICS] = torch.eye(TOPICS) * math.sqrt(TOPIC_BONUS)
    wo[:GENERAL, HEAD_DIM:] = torch.randn(GENERAL, (HEADS - 1) * HEAD_DIM, generator=g) * 0.1  # 2% of a logit
    rows = successor_rows(embed[TOPICS:TOPICS + STATES], w1, w2)  # topic 0's tokens: the MLP ignores the topic
    following = successor(seed)
    out = torch.randn(VOCAB, HIDDEN, generator=g) * 0.01  # topic tokens: never the answer
    for t in range(TOPICS):
        out[token(following, t), :GENERAL] = rows[:, :GENERAL]  # token (succ(s), t) peaks on the MLP's output for s
        out[token(torch.arange(STATES), t), GROUP + t] = math.sqrt(TOPIC_BONUS)
    weights = {"embed": embed, "w1": w1, "w2": w2, "wq": wq, "wk": wk, "wv": wv, "wo": wo, "out": out}
    return {k: v.to(torch.bfloat16).to(device) for k, v in weights.items()}


def successor_rows(embed, w1, w2):
    """Each state's MLP output as the bf16 step computes it, less the part every state shares, scaled to
    sqrt(GENERAL): the output projection's row for its successor, so the MLP decides the state."""
    bf16 = lambda t: t.to(torch.bfloat16).float()  # noqa: E731
    mlp = torch.relu(bf16(embed) @ bf16(w1).T) @ bf16(w2).T
    mlp = mlp - mlp.mean(0)
    return mlp * (GENERAL**0.5 / mlp.norm(dim=1, keepdim=True))


def least_flops(lengths: list[tuple[int, int]]) -> float:
    """The model's FLOPs for requests of these (prompt, output) lengths: every token through the projections,
    the MLP and the output layer once (2 a weight), attention's scores and sums over each token's context. At
    an H100's best bf16 rate a trace's come to about a millisecond: a server's replay that kept the GPU busy
    for less did not run the model (tutor.grading.serving.check_serving_floor)."""
    weights = 4 * HIDDEN * HEADS * HEAD_DIM + 2 * HIDDEN * FFN + VOCAB * HIDDEN
    tokens = sum(prompt + new for prompt, new in lengths)
    contexts = sum((prompt + new) * (prompt + new + 1) // 2 for prompt, new in lengths)
    return 2 * weights * tokens + 4 * HEADS * HEAD_DIM * contexts


# A trace: requests, and their mean arrival rate a second. Outputs stop at 256 tokens and a trace has 512
# requests so that a replay's throughput is the trace's many requests, not its one longest: with 256 requests
# and outputs up to 1024, the reference's five pairs on the H100 read 3.40-5.49x (sweeps/trace_spread.py).
REQUESTS, RATE = 512, 400.0
PROMPT_MEDIAN, PROMPT_MAX, OUTPUT_MEDIAN, OUTPUT_MAX = 48, 1024, 32, 256
_TRACE_STREAM = 1 << 40


def make_trace(seed: int) -> list[dict]:
    """Requests as they arrive (Poisson, RATE a second), each a topic's prompt and an output length; both
    lengths heavy-tailed (log-normal: most short, a few near their maximum)."""
    g = torch.Generator().manual_seed(_TRACE_STREAM + seed)
    gaps = torch.empty(REQUESTS).exponential_(RATE, generator=g)
    arrivals = torch.cumsum(gaps, 0) - gaps[0]
    prompt = (PROMPT_MEDIAN * torch.exp(1.2 * torch.randn(REQUESTS, generator=g))).clamp(2, PROMPT_MAX).long()
    output = (OUTPUT_MEDIAN * torch.exp(1.4 * torch.randn(REQUESTS, generator=g))).clamp(1, OUTPUT_MAX).long()
    topics = torch.randint(TOPICS, (REQUESTS,), generator=g)
    trace = []
    for i in range(REQUESTS):
        t = int(topics[i])
        states = torch.randint(STATES, (int(prompt[i]) - 1,), generator=g)
        trace.append({"rid": i, "arrival_s": float(arrivals[i]), "max_new": int(output[i]),
                      "prompt": [t, *(token(int(s), t) for s in states)]})
    return trace
