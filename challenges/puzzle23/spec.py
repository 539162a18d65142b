"""Inputs for puzzle23: a prefill worker that serves a batch of prompts of every length under a memory budget.

One forward() prefills PROMPTS prompts, one after another, through LAYERS decoder layers (a Llama-3.2-1B layer's
shapes: grouped-query attention, a SwiGLU MLP), keeping each prompt's KV cache, then runs one decode step for every
prompt over its own cache. It returns, per prompt, the decode step's hidden state [PROMPTS, HIDDEN] in fp32. A
prompt's length is drawn from SHORTEST..LONGEST tokens (TOKENS in every call), its embeddings too, on the device,
at grade time.

The budget: the workload must hold no more GPU memory than the baseline holds on the same inputs, MEMORY_SLACK
more at most (what its process's caching allocator reserved from CUDA at its peak over every call of the grade,
and what the process held outside that allocator, less its CUDA context and the harness's inputs;
tutor.harness.allocator_peak, graders/puzzle23.py).
"""

import torch

HIDDEN, FFN, LAYERS = 2048, 8192, 2
HEADS, KV_HEADS = 32, 8
HEAD = HIDDEN // HEADS
KV = KV_HEADS * HEAD  # the width of a layer's keys, and of its values
PROMPTS = 8
SHORTEST, LONGEST = 128, 4096
MEMORY_SLACK = 0.03
_WEIGHT_STREAM, _INPUT_STREAM, _WARMUP_STREAM = 1 << 45, 1 << 46, 1 << 47


def make_weights(seed: int, device: str) -> dict:
    """Each layer's projections in bf16, [in, out] (x @ w): qkv [HIDDEN, HIDDEN + 2 KV], o [HIDDEN, HIDDEN], the
    MLP's gate and up side by side [HIDDEN, 2 FFN] and down [FFN, HIDDEN]."""
    g = torch.Generator().manual_seed(_WEIGHT_STREAM + seed)
    shapes = {"qkv": (HIDDEN, HIDDEN + 2 * KV), "o": (HIDDEN, HIDDEN), "up": (HIDDEN, 2 * FFN), "down": (FFN, HIDDEN)}
    return {f"{n}.{name}": (torch.randn(*shape, generator=g) * shape[0] ** -0.5).to(torch.bfloat16).to(device)
            for n in range(LAYERS) for name, shape in shapes.items()}


def _prompts(lengths, stream: int, device: str) -> list[torch.Tensor]:
    """Each prompt's token embeddings [length, HIDDEN] in bf16, drawn on the device (a CPU draw of 16k tokens'
    embeddings would cost more than the call)."""
    g = torch.Generator(device=device).manual_seed(stream)
    return [torch.randn(int(n), HIDDEN, generator=g, device=device).to(torch.bfloat16) for n in lengths]


def _lengths(g: torch.Generator) -> list[int]:
    """PROMPTS lengths from SHORTEST..LONGEST in a random order, drawn in pairs that sum to SHORTEST + LONGEST:
    every call holds TOKENS tokens, so its work is the same whatever its prompts (a timed call's cost varies
    with how the allocator meets their sizes, not with how many tokens it drew)."""
    half = torch.randint(SHORTEST, LONGEST + 1, (PROMPTS // 2,), generator=g)
    lengths = torch.cat([half, SHORTEST + LONGEST - half])
    return lengths[torch.randperm(PROMPTS, generator=g)].tolist()


def make_input(seed: int, device: str) -> list[torch.Tensor]:
    """PROMPTS prompts, each of a length from SHORTEST..LONGEST, TOKENS in all."""
    g = torch.Generator().manual_seed(_INPUT_STREAM + seed)
    return _prompts(_lengths(g), _INPUT_STREAM + seed, device)


def warmup_inputs(seed: int, device: str) -> list[list[torch.Tensor]]:
    """Four calls whose prompts run from the shortest to the longest: every kernel chosen, and the allocator's cache
    as a server's is after its first requests."""
    g = torch.Generator().manual_seed(_WARMUP_STREAM + seed)
    return [_prompts(_lengths(g), _WARMUP_STREAM + seed * 8 + i, device) for i in range(4)]


TOKENS = PROMPTS // 2 * (SHORTEST + LONGEST)  # every call's prompts, summed: 16896


def least_work(l2_bytes: int) -> dict:
    """The least one forward() must do on any GPU (tutor.grading.floor): each layer's four projections over every
    prompt token, in bf16 (attention's own flops left out: a floor, not an estimate)."""
    per_token = 2 * HIDDEN * (HIDDEN + 2 * KV + HIDDEN + 2 * FFN) + 2 * FFN * HIDDEN
    return {"flops": LAYERS * TOKENS * per_token, "flop_dtype": "bf16",
            "what": f"{LAYERS} layers' projections over the {TOKENS} prompt tokens of a call, in bf16"}
