"""The step unchunked and captured in a CUDA graph, NCCL's all-reduces with it: a call is the input's copy
into the graph's buffer and one replay, so neither the matmuls' nor the collectives' launches cost the host
anything. On a CPU (gloo, the tests) there is no graph: the same step runs eagerly.
"""

import torch
import torch.distributed as dist


def prepare(weights: dict, device: str):
    """This rank's halves of each layer (spec.shard), and on a GPU the step captured once for this shape of input."""
    halves = weights["layers"]
    state = {"layers": halves, "graph": None}
    if device == "cuda":
        width = halves[0]["w2"].shape[1]
        tokens = 16  # the spec's step; another shape runs eagerly
        state["x"] = torch.zeros(tokens, width, dtype=torch.bfloat16, device=device)
        side = torch.cuda.Stream()
        side.wait_stream(torch.cuda.current_stream())
        with torch.cuda.stream(side):  # warm-up outside the graph: NCCL's communicator and cuBLAS's workspace
            for _ in range(3):
                _step(halves, state["x"])
        torch.cuda.current_stream().wait_stream(side)
        graph = torch.cuda.CUDAGraph()
        with torch.cuda.graph(graph):
            state["y"] = _step(halves, state["x"])
        state["graph"] = graph
    return state


def _step(layers: list, x: torch.Tensor) -> torch.Tensor:
    for w in layers:
        partial = torch.relu(x @ w["w1"]) @ w["w2"]
        dist.all_reduce(partial)
        x = x + partial
    return x


def forward(state: dict, x: torch.Tensor) -> torch.Tensor:
    if state["graph"] is None or x.shape != state["x"].shape:
        return _step(state["layers"], x)
    state["x"].copy_(x)
    state["graph"].replay()
    return state["y"].clone()  # the graph's buffer is overwritten by the next replay
