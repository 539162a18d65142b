"""The four layers as GemLite A16W8 fp8 layers (fp8 weights, bf16 activations), called eagerly.

GemLite picks the matmul kernel and its tile config per call, from the batch size M.
"""

import torch
from gemlite.helper import A16W8_FP8


def prepare(weights: dict, device: str):
    return [A16W8_FP8(device=device, dtype=torch.bfloat16).from_weights(w.clone()) for w in weights["weights"]]


def forward(layers, x: torch.Tensor) -> torch.Tensor:
    with torch.inference_mode():
        for layer in layers:
            x = layer(x)
        return x
