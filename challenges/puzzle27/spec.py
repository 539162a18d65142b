"""Inputs for puzzle27 (the capstone): greedy decoding with a Llama-3.2-1B-shaped decoder, 16 new tokens for 8
sequences whose 2048-token prompts a prefill has already cached.

The model is the architecture at its real shapes (16 layers, hidden 2048, 32 query heads over 8 key/value heads
of 64, a SwiGLU MLP of 8192, RMSNorm, rotary positions with theta 500000, the embedding tied to the output),
its weights random (std 0.02, as the model is initialised), bf16 as served: 1.24 B parameters, 2.5 GB. An input
is the prompt's key/value cache, drawn at grade time (bf16, [LAYERS, BATCH, KV_HEADS, PROMPT, HEAD_DIM] each,
537 MB together), and each sequence's token after the prompt (the prefill's choice); a call feeds that token and
returns the next 16 each sequence decodes.

A token is the argmax of 128256 logits, and bf16's rounding in another order (a fused kernel, a graph, another
matmul tile) may pick the other of two near-equal tokens, after which the two decodes part for good. So the
output is judged along its own path (puzzle.toml's [correctness] judged, tutor.harness.worker.Worker.judge):
`judge` runs the model here, in the oracle's process, over the cache and the decode's own tokens, and gives each
step's logit of the token chosen and the best logit of that step. A decode whose every choice is a best one (to
bf16's rounding) reads right whichever path it took; one that skips the model's work chooses tokens the model
scores lower.
"""

import math

import torch
import torch.nn.functional as F

LAYERS, HIDDEN, HEADS, KV_HEADS, HEAD_DIM, FFN, VOCAB = 16, 2048, 32, 8, 64, 8192, 128256
BATCH, PROMPT, STEPS = 8, 2048, 16
ROPE_THETA, NORM_EPS, INIT_STD = 500000.0, 1e-5, 0.02
_INPUT_STREAM = 1 << 40


def make_weights(seed: int, device: str) -> dict:
    """The embedding (tied to the output) [VOCAB, HIDDEN], the final norm, and per layer: wq [HIDDEN, HEADS*HEAD_DIM],
    wk and wv [HIDDEN, KV_HEADS*HEAD_DIM], wo [HEADS*HEAD_DIM, HIDDEN], w_gate and w_up [HIDDEN, FFN], w_down [FFN,
    HIDDEN] (each x @ w), and the two norms' weights; bf16. Drawn on the device: 2.5 GB."""
    g = torch.Generator(device=device).manual_seed(seed)

    def normal(*shape):
        return (torch.randn(*shape, generator=g, device=device) * INIT_STD).to(torch.bfloat16)

    def ones():
        return torch.ones(HIDDEN, device=device, dtype=torch.bfloat16)

    layers = [{"wq": normal(HIDDEN, HEADS * HEAD_DIM), "wk": normal(HIDDEN, KV_HEADS * HEAD_DIM),
               "wv": normal(HIDDEN, KV_HEADS * HEAD_DIM), "wo": normal(HEADS * HEAD_DIM, HIDDEN),
               "w_gate": normal(HIDDEN, FFN), "w_up": normal(HIDDEN, FFN), "w_down": normal(FFN, HIDDEN),
               "attn_norm": ones(), "mlp_norm": ones()} for _ in range(LAYERS)]
    return {"embed": normal(VOCAB, HIDDEN), "norm": ones(), "layers": layers}


def make_input(seed: int, device: str) -> dict:
    """The prompt's cache, keys and values [LAYERS, BATCH, KV_HEADS, PROMPT, HEAD_DIM] bf16 (a prefill's, drawn
    here), and each sequence's first decoded token [BATCH] (int64: the prefill's choice), at position PROMPT."""
    g = torch.Generator(device=device).manual_seed(_INPUT_STREAM + seed)
    shape = (LAYERS, BATCH, KV_HEADS, PROMPT, HEAD_DIM)
    return {"k": torch.randn(*shape, generator=g, device=device, dtype=torch.bfloat16),
            "v": torch.randn(*shape, generator=g, device=device, dtype=torch.bfloat16),
            "last": torch.randint(VOCAB, (BATCH,), generator=g, device=device)}


def least_work(l2_bytes: int) -> dict:
    """The least one forward() must do (tutor.grading.floor): every step reads every weight once (the batch shares
    them) and the cache so far, at 2 bytes a value."""
    weights = 2 * (VOCAB * HIDDEN + LAYERS * (2 * HIDDEN * HEADS * HEAD_DIM + 2 * HIDDEN * KV_HEADS * HEAD_DIM
                                              + 3 * HIDDEN * FFN))
    cache = sum(2 * 2 * LAYERS * BATCH * KV_HEADS * (PROMPT + t) * HEAD_DIM for t in range(STEPS))
    return {"hbm_bytes": STEPS * weights + cache,
            "what": f"{STEPS} steps each reading {weights / 2**30:.1f} GiB of weights, and the cache so far"}


# -- the oracle's judge: the model, written here once, out of every workload's reach ----------------------------

def judge(oracle, inputs: dict, tokens: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """Along a decode's own path (`tokens` [BATCH, STEPS]): each step's logit of the token chosen, and the best logit
    of that step, [BATCH, STEPS] fp32 each. `oracle`: the oracle's prepared state, the prototype's decoder (its
    weights its `w`), or the weights themselves. The steps' inputs are the prefill's token and the tokens chosen, so
    the model runs them as one causal pass over the prompt's cache."""
    weights = getattr(oracle, "w", oracle)
    fed = torch.cat([inputs["last"][:, None], tokens[:, :-1]], dim=1)
    logits = logits_along(weights, inputs["k"], inputs["v"], fed)
    scored = logits.gather(-1, tokens[..., None].long())[..., 0]
    return scored, logits.max(-1).values


def logits_along(weights: dict, k_cache: torch.Tensor, v_cache: torch.Tensor, fed: torch.Tensor) -> torch.Tensor:
    """The logits [BATCH, T, VOCAB] (fp32) after each of `fed`'s T tokens, at positions PROMPT + t, attending to
    the prompt's cache and to each other causally."""
    batch, steps = fed.shape
    prompt = k_cache.shape[3]
    cos, sin = rope(torch.arange(prompt, prompt + steps, device=fed.device))
    x = weights["embed"][fed]
    mask = torch.ones(steps, prompt + steps, dtype=torch.bool, device=fed.device).tril(prompt)
    for i, w in enumerate(weights["layers"]):
        h = rms_norm(x, w["attn_norm"])
        q = apply_rope((h @ w["wq"]).view(batch, steps, HEADS, HEAD_DIM).transpose(1, 2), cos, sin)
        k = apply_rope((h @ w["wk"]).view(batch, steps, KV_HEADS, HEAD_DIM).transpose(1, 2), cos, sin)
        v = (h @ w["wv"]).view(batch, steps, KV_HEADS, HEAD_DIM).transpose(1, 2)
        k = torch.cat([k_cache[i], k], dim=2)
        v = torch.cat([v_cache[i], v], dim=2)
        att = F.scaled_dot_product_attention(q, k, v, attn_mask=mask, enable_gqa=True)
        x = x + att.transpose(1, 2).reshape(batch, steps, HEADS * HEAD_DIM) @ w["wo"]
        h = rms_norm(x, w["mlp_norm"])
        x = x + (F.silu(h @ w["w_gate"]) * (h @ w["w_up"])) @ w["w_down"]
    return (rms_norm(x, weights["norm"]) @ weights["embed"].T).float()


def rms_norm(x: torch.Tensor, weight: torch.Tensor) -> torch.Tensor:
    xf = x.float()
    return (xf * torch.rsqrt(xf.pow(2).mean(-1, keepdim=True) + NORM_EPS)).to(x.dtype) * weight


def rope(positions: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """cos and sin [T, HEAD_DIM] for the positions, halves repeated (the rotate-half convention)."""
    inv = 1.0 / (ROPE_THETA ** (torch.arange(0, HEAD_DIM, 2, device=positions.device).float() / HEAD_DIM))
    angles = positions.float()[:, None] * inv[None]
    angles = torch.cat([angles, angles], dim=-1)
    return angles.cos(), angles.sin()


def apply_rope(x: torch.Tensor, cos: torch.Tensor, sin: torch.Tensor) -> torch.Tensor:
    half = x.shape[-1] // 2
    rotated = torch.cat([-x[..., half:], x[..., :half]], dim=-1)
    return (x.float() * cos + rotated.float() * sin).to(x.dtype)


assert HEADS % KV_HEADS == 0 and math.log2(HEAD_DIM).is_integer()
