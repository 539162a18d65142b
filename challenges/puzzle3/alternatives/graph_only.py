"""Honest alternative (the first fix a profile suggests): GemLite's layers, as they are, replayed as one CUDA graph.

The baseline's time is the host's dispatch; a graph removes it. GemLite's own kernel choice
stays: bronze, and no more, since silver and gold ask for a better choice than GemLite's.
"""

import torch
from gemlite.helper import A16W8_FP8

TOKENS = 128


class GraphedLayers:
    def __init__(self, weights, device: str):
        self.layers = [A16W8_FP8(device=device, dtype=torch.bfloat16).from_weights(w.clone()) for w in weights]
        self.static_x = torch.zeros(TOKENS, weights[0].shape[1], dtype=torch.bfloat16, device=device)
        with torch.inference_mode():
            self._run()  # GemLite autotunes and triton compiles here, never inside the capture
            side = torch.cuda.Stream()
            side.wait_stream(torch.cuda.current_stream())
            with torch.cuda.stream(side):
                self._run()
            torch.cuda.current_stream().wait_stream(side)
            self.graph = torch.cuda.CUDAGraph()
            with torch.cuda.graph(self.graph):
                self.static_y = self._run()

    def _run(self):
        h = self.static_x
        for layer in self.layers:
            h = layer(h)
        return h

    def __call__(self, x):
        self.static_x.copy_(x)
        self.graph.replay()
        return self.static_y.clone()


def prepare(weights: dict, device: str):
    return GraphedLayers(weights["weights"], device)


def forward(model, x: torch.Tensor) -> torch.Tensor:
    return model(x)
