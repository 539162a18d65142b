"""The logits processor: each step's logits scaled by their request's temperature, the
vocabulary's bias added, and turned into log-probabilities in fp32, under torch.compile as it shipped.
"""

import torch


def log_probs(logits: torch.Tensor, temperature: torch.Tensor, bias: torch.Tensor) -> torch.Tensor:
    x = logits.float() / temperature[:, None] + bias
    return torch.log_softmax(x, dim=-1)


def prepare(weights: dict, device: str):
    return {"process": torch.compile(log_probs, dynamic=False), "bias": weights["bias"]}


def forward(state: dict, steps: list) -> torch.Tensor:
    with torch.inference_mode():
        return torch.cat([state["process"](logits, temperature, state["bias"]) for logits, temperature in steps])
