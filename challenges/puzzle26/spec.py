"""Inputs for puzzle26: one mixture-of-experts layer served expert-parallel over 2 GPUs, 16384 tokens a call.

Eight experts, each an MLP (HIDDEN -> FFN -> HIDDEN, GELU); a router sends every token to one expert (the argmax of
x @ router + bias) and the layer returns gate * expert(x), gate the router's softmax weight of that expert (the
residual is the caller's to add).
Experts 0-3 live on rank 0, 4-7 on rank 1 (`shard`: each rank is handed its four and the router, nothing else);
every rank gets the same tokens and returns the whole layer's output, and every rank's output is checked. The
traffic is skewed, as a served model's is: some experts are far more popular than others, how much so drawn at
grade time with the weights. bf16 as served.
"""

import random

import torch

EXPERTS, TOKENS, HIDDEN, FFN = 8, 16384, 4096, 32768
_WEIGHTS_STREAM, _INPUT_STREAM = 1 << 41, 1 << 40
# Tokens an expert draws, as shares of a call's: two experts' worth of traffic on each GPU when placed well.
POPULARITY = (8, 6, 4, 3, 2, 1, 1, 1)
# GPU memory a rank may keep past its four experts (buffers, routing tables): less than one expert's 512 MiB.
RANK_SLACK_BYTES = 96 << 20


def make_weights(seed: int, device: str) -> dict:
    """Every expert's w1 [HIDDEN, FFN] and w2 [FFN, HIDDEN], bf16, and the router [HIDDEN, EXPERTS] with its bias,
    fp32. Which expert is how popular is drawn from the seed: the four most popular on one GPU."""
    # The experts drawn where they will live: 4 GiB drawn on one host thread took 14 s of every preparation.
    on_device = torch.Generator(device=device).manual_seed(_WEIGHTS_STREAM + seed)
    experts = []
    for _ in range(EXPERTS):
        w1 = torch.randn(HIDDEN, FFN, generator=on_device, device=device) * HIDDEN**-0.5
        w2 = torch.randn(FFN, HIDDEN, generator=on_device, device=device) * (0.5 * FFN**-0.5)
        experts.append({"w1": w1.to(torch.bfloat16), "w2": w2.to(torch.bfloat16)})
    # The router on the host's generator: every rank routes alike, whatever its GPU's generator does.
    g = torch.Generator(device="cpu").manual_seed(seed)
    # Drawn with Python's random from the seed: the weights may be fake tensors (tutor.dev_check counts them).
    pick = random.Random(seed)
    hot = pick.randrange(2)  # the GPU whose experts draw most of the traffic
    half = EXPERTS // 2
    order = [e for side in (hot, 1 - hot) for e in pick.sample(range(side * half, (side + 1) * half), half)]
    share = torch.empty(EXPERTS)
    share[order] = torch.tensor(POPULARITY, dtype=torch.float) / sum(POPULARITY)
    router = torch.randn(HIDDEN, EXPERTS, generator=g) * HIDDEN**-0.5  # logits of unit size for unit-size tokens
    # Argmax over logits of unit noise plus 0.63 log(share) draws about `share` of the tokens for each expert.
    return {"experts": experts, "router": router.to(device), "bias": (0.63 * share.log()).to(device)}


def shard(weights: dict, rank: int, world: int) -> dict:
    """What rank `rank` holds: its experts (rank 0 the first EXPERTS // world, in order), the router and its bias."""
    per = EXPERTS // world
    return {"experts": weights["experts"][rank * per:(rank + 1) * per], "first": rank * per,
            "router": weights["router"], "bias": weights["bias"]}


def make_input(seed: int, device: str) -> torch.Tensor:
    """The call's tokens [TOKENS, HIDDEN], bf16, the same on every rank."""
    g = torch.Generator(device=device).manual_seed(_INPUT_STREAM + seed)
    return torch.randn(TOKENS, HIDDEN, generator=g, device=device).to(torch.bfloat16)


def least_work(l2_bytes: int) -> dict:
    """The least one forward() must do on one GPU of the two (tutor.grading.floor): half of every token's expert
    matmuls at the bf16 rate."""
    return {"flops": 2 * 2 * TOKENS * HIDDEN * FFN // 2, "flop_dtype": "bf16",
            "what": f"half of {TOKENS} tokens' expert matmuls ({HIDDEN} x {FFN}, twice) on each of 2 GPUs"}
