"""The bf16 model with its eight launches captured once in a CUDA graph: the bar for gold.

At batch size 1 launch overhead alone makes bf16 eager ~2x slower than this, so
beating bf16 eager proves little; beating this needs fewer bytes read per token.
"""

import torch


def prepare(weights: dict, device: str):
    ws = [w.contiguous() for w in weights["weights"]]
    static_x = torch.zeros(1, ws[0].shape[1], dtype=torch.bfloat16, device=device)

    def run():
        h = static_x
        for w in ws:
            h = torch.nn.functional.linear(h, w)
        return h

    with torch.inference_mode():
        side = torch.cuda.Stream()
        side.wait_stream(torch.cuda.current_stream())
        with torch.cuda.stream(side):
            run()  # warm-up off the default stream, as capture requires
        torch.cuda.current_stream().wait_stream(side)
        graph = torch.cuda.CUDAGraph()
        with torch.cuda.graph(graph):
            static_y = run()
    # The graph holds raw addresses, not tensors: the weights must stay alive in the state.
    return graph, static_x, static_y, ws


def forward(state, x: torch.Tensor) -> torch.Tensor:
    graph, static_x, static_y, _ = state
    static_x.copy_(x)
    graph.replay()
    return static_y.clone()
