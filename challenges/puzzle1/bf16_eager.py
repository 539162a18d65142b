"""The decoder's eight linear layers in bf16, as they ran before quantization: the comparator and the oracle."""

import torch


def prepare(weights: dict, device: str):
    layers = []
    for w in weights["weights"]:
        out_features, in_features = w.shape
        layer = torch.nn.Linear(in_features, out_features, bias=False, dtype=torch.bfloat16, device=device)
        layer.weight.data.copy_(w)
        layers.append(layer)
    return torch.nn.Sequential(*layers).eval()


def forward(model, x: torch.Tensor) -> torch.Tensor:
    with torch.inference_mode():
        return model(x)
