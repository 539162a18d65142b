"""Reference solution: the four fp8 layers in one CUDA graph, each run with the split-K GEMM.

Eager, every GemLite call pays ~0.3 ms of host dispatch for a ~35 µs kernel: the
graph removes that. Then the kernel choice: at M=128 GemLite switches to its GEMM
kernel (M >= 64), but on the H100 the split-K kernel, tuned for this M, is 12-18%
faster for 4096x4096 (docs/notes/puzzle3-measurements.md), so ask for it by name.
"""

import torch
from gemlite.helper import A16W8_FP8


def prepare(weights: dict, device: str):
    layers = [A16W8_FP8(device=device, dtype=torch.bfloat16).from_weights(w.clone()) for w in weights["weights"]]
    static_x = torch.zeros(128, weights["weights"][0].shape[1], dtype=torch.bfloat16, device=device)

    def run():
        h = static_x
        for layer in layers:
            h = layer.forward_manual(h, matmul_type="GEMM_SPLITK")
        return h

    with torch.inference_mode():
        run()  # no cached config for split-K at M=128: triton autotunes here, outside any capture
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
