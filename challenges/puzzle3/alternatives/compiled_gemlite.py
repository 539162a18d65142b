"""Honest alternative (torch.compile): GemLite's layers under torch.compile(mode="reduce-overhead").

The host dispatch that dominates the baseline goes into a CUDA graph recorded by cudagraph
trees; GemLite's kernel choice stays its own, so this is a bronze fix at best. It earns no tier:
each call still spends about 0.55 ms of host time in dynamo's guards and the trees' bookkeeping
(the H100), five times its GPU work, and a call timed on its own pays all of it. A graph captured
by hand replays in a fraction of that.
"""

import torch
from gemlite.helper import A16W8_FP8

TOKENS = 128


def prepare(weights: dict, device: str):
    layers = [A16W8_FP8(device=device, dtype=torch.bfloat16).from_weights(w.clone()) for w in weights["weights"]]

    def run(x):
        for layer in layers:
            x = layer(x)
        return x

    compiled = torch.compile(run, mode="reduce-overhead")
    x = torch.zeros(TOKENS, weights["weights"][0].shape[1], dtype=torch.bfloat16, device=device)
    with torch.inference_mode():
        run(x)  # GemLite autotunes eagerly first, never inside a recording
        for _ in range(3):
            compiled(x)
    return compiled, layers


def forward(state, x: torch.Tensor) -> torch.Tensor:
    compiled, _ = state
    with torch.inference_mode():
        return compiled(x).clone()
