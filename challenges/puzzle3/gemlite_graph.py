"""GemLite's own choices, with the four layers captured once in a CUDA graph: the bar for gold.

Capturing removes the host's per-call dispatch; what is left is the time of the
kernels GemLite chose. Beating this means choosing better kernels than it does.
"""

import torch
from gemlite.helper import A16W8_FP8


def prepare(weights: dict, device: str):
    layers = [A16W8_FP8(device=device, dtype=torch.bfloat16).from_weights(w.clone()) for w in weights["weights"]]
    static_x = torch.zeros(128, weights["weights"][0].shape[1], dtype=torch.bfloat16, device=device)

    def run():
        h = static_x
        for layer in layers:
            h = layer(h)
        return h

    with torch.inference_mode():
        run()  # autotuning and compilation happen here, outside any capture
        side = torch.cuda.Stream()
        side.wait_stream(torch.cuda.current_stream())
        with torch.cuda.stream(side):
            run()
        torch.cuda.current_stream().wait_stream(side)
        graph = torch.cuda.CUDAGraph()
        with torch.cuda.graph(graph):
            static_y = run()
    return graph, static_x, static_y, layers  # the graph reads the layers' weights in place


def forward(state, x: torch.Tensor) -> torch.Tensor:
    graph, static_x, static_y, _ = state
    static_x.copy_(x)
    graph.replay()
    return static_y.clone()
