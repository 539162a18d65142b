"""Inputs for puzzle5: 32 sequences decoded for 32 steps after a 4096-token prompt, one attention layer.

Each input is the prompt's key/value cache and the last hidden state, as a prefill would hand them
to the decode loop. bf16 throughout, as a server keeps its cache: its attention then runs in a flash
kernel that reads the cache near memory speed, so the copies of a growing cache are what a step pays
for (sweeps/step_costs.py: in fp32 the attention was most of a step, and the copies a minority). A long
context, so a step's bytes (540 MB of cache) outweigh its Python and launches (sweeps/scene_size.py: at
64 sequences of 512 tokens the host set a step's time and writing in place gained nothing).
Keeping the cache in place changes no arithmetic, so every honest fix gives the baseline's numbers up
to the order of its reductions.
"""

import torch

BATCH, HIDDEN, HEADS, PROMPT, STEPS = 32, 1024, 8, 4096, 32
DTYPE = torch.bfloat16
_INPUT_STREAM = 1 << 40


def make_weights(seed: int, device: str) -> dict:
    g = torch.Generator().manual_seed(seed)
    return {name: (torch.randn(HIDDEN, HIDDEN, generator=g) * HIDDEN**-0.5).to(device, DTYPE)
            for name in ("wq", "wk", "wv", "wo")}


def make_input(seed: int, device: str) -> dict:
    """The prompt's cache (keys and values, [BATCH, PROMPT, HIDDEN]) and the hidden state to decode from."""
    g = torch.Generator(device=device).manual_seed(_INPUT_STREAM + seed)  # on the GPU: 84 MB drawn fast
    return {name: torch.randn(*shape, generator=g, device=device, dtype=DTYPE)
            for name, shape in (("h", (BATCH, HIDDEN)), ("k", (BATCH, PROMPT, HIDDEN)), ("v", (BATCH, PROMPT, HIDDEN)))}


def least_work(l2_bytes: int) -> dict:
    """The least one forward() must do on any GPU (tutor.grading.floor): every step's attention reads
    the whole cache so far, keys and values, counted at 2 bytes a value (the scene's bf16; a cache kept in
    fp8 keeps the tolerance, and this floor refuses only one read near full bandwidth: MEASUREMENTS.md),
    less what L2 can keep from one step to the next."""
    read = sum(max(0, 2 * BATCH * (PROMPT + t + 1) * HIDDEN * 2 - l2_bytes) for t in range(STEPS))
    return {"hbm_bytes": read, "what": f"{STEPS} steps of attention reading the cache so far at 16 bits a "
                                      f"value, {PROMPT} to {PROMPT + STEPS} tokens of {BATCH} sequences"}
