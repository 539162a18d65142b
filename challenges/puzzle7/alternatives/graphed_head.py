"""The projection head replayed from CUDA graphs captured by hand, one a batch, and each batch's embeddings copied
to the host on a stream of their own under the next batch's replay.

The graphs are captured at the first call (the input's shape is known then): a static input buffer, which each call
fills with one device copy, and each graph's output at a fixed address. The copies read those outputs; the call
waits for the last one before it returns, so no replay of the next call can overwrite an output still being read.
"""

import torch
import torch.nn.functional as F


def head(x: torch.Tensor, w1: torch.Tensor, w2: torch.Tensor) -> torch.Tensor:
    return F.normalize(F.gelu(x @ w1) @ w2, dim=-1)


def prepare(weights: dict, device: str):
    return {"w": weights, "copies": torch.cuda.Stream(), "captured": None}


def capture(w: dict, x: torch.Tensor) -> dict:
    """A graph a batch over one static input; each one's output kept alive, so no two share memory."""
    static_in = torch.empty_like(x)
    warm = torch.cuda.Stream()  # cuBLAS picks its kernels and workspace outside the capture
    warm.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(warm):
        head(static_in[0], w["w1"], w["w2"])
    torch.cuda.current_stream().wait_stream(warm)
    graphs, outputs = [], []
    for batch in static_in:
        graph = torch.cuda.CUDAGraph()
        with torch.cuda.graph(graph):
            outputs.append(head(batch, w["w1"], w["w2"]))
        graphs.append(graph)
    return {"shape": x.shape, "input": static_in, "graphs": graphs, "outputs": outputs}


def forward(s: dict, x: torch.Tensor) -> torch.Tensor:
    if s["captured"] is None or s["captured"]["shape"] != x.shape:
        s["captured"] = capture(s["w"], x)
    captured, copies = s["captured"], s["copies"]
    captured["input"].copy_(x)
    out = torch.empty(x.shape[0], x.shape[1], captured["outputs"][0].shape[-1], pin_memory=True)
    for i, graph in enumerate(captured["graphs"]):
        graph.replay()
        made = torch.cuda.Event()
        made.record()
        with torch.cuda.stream(copies):
            copies.wait_event(made)
            out[i].copy_(captured["outputs"][i], non_blocking=True)
    copies.synchronize()
    return out
