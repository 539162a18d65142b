"""Honest alternative (torch.compile): the weights as parameters of a module, batches padded to 7 buckets.

torch.compile(mode="reduce-overhead", dynamic=False) records one CUDA graph per bucket through
cudagraph trees. Parameters are static to cudagraph trees: they are read in place, never copied
into the graph's pool, unlike the plain tensors the baseline closes over. Fewer buckets than
the reference (more padded rows), and a compiler's graphs rather than hand-made ones.
"""

import torch
import torch.nn.functional as F

BUCKETS = (1, 4, 8, 16, 32, 48, 64)


class Stack(torch.nn.Module):
    def __init__(self, layers):
        super().__init__()
        self.w1 = torch.nn.ParameterList(torch.nn.Parameter(w1, requires_grad=False) for w1, _ in layers)
        self.w2 = torch.nn.ParameterList(torch.nn.Parameter(w2, requires_grad=False) for _, w2 in layers)

    def forward(self, x):
        for w1, w2 in zip(self.w1, self.w2):
            h = F.layer_norm(x, x.shape[-1:])
            x = x + F.linear(F.gelu(F.linear(h, w1)), w2)
        return x


def prepare(weights: dict, device: str):
    model = Stack(weights["layers"]).eval()
    return torch.compile(model, mode="reduce-overhead", dynamic=False)


def forward(model, xs: list[torch.Tensor]) -> torch.Tensor:
    outs = []
    with torch.inference_mode():
        for x in xs:
            bs = x.shape[0]
            bucket = next(b for b in BUCKETS if b >= bs)
            padded = F.pad(x, (0, 0, 0, bucket - bs))  # padding rows: computed, then dropped
            outs.append(model(padded)[:bs].clone())  # the next replay overwrites the graph's output
    return torch.cat(outs)
