"""Reference solution: a few CUDA graphs, one per batch-size bucket, sharing one memory pool.

Batch sizes are padded up to the next bucket, so 9 graphs serve all 64 sizes.
The graphs are captured in prepare(), largest first, into one shared pool:
each smaller graph reuses the blocks the larger one freed, so the pool is about
as big as the largest graph's activations, not the sum of all graphs.
The weights stay where they are: the graphs read them in place, never a copy.
"""

import torch
import torch.nn.functional as F

BUCKETS = (1, 2, 4, 8, 16, 24, 32, 48, 64)


def block_stack(x: torch.Tensor, layers) -> torch.Tensor:
    for w1, w2 in layers:
        h = F.layer_norm(x, x.shape[-1:])
        x = x + F.linear(F.gelu(F.linear(h, w1)), w2)
    return x


class BucketedGraphs:
    def __init__(self, layers, hidden: int, device: str):
        self.layers = layers  # graphs hold raw addresses: keep the weights alive here
        self.static_in = torch.zeros(BUCKETS[-1], hidden, dtype=torch.bfloat16, device=device)
        self.graphs = {}
        pool = torch.cuda.graph_pool_handle()
        side = torch.cuda.Stream()
        side.wait_stream(torch.cuda.current_stream())
        with torch.cuda.stream(side):  # warm-up off the capture stream: cuBLAS handles, workspaces
            for _ in range(3):
                block_stack(self.static_in, layers)
        torch.cuda.current_stream().wait_stream(side)
        for b in sorted(BUCKETS, reverse=True):
            graph = torch.cuda.CUDAGraph()
            with torch.cuda.graph(graph, pool=pool):
                out = block_stack(self.static_in[:b], layers)
            self.graphs[b] = (graph, out)

    def __call__(self, x: torch.Tensor) -> torch.Tensor:
        bs = x.shape[0]
        bucket = next(b for b in BUCKETS if b >= bs)
        self.static_in[:bs].copy_(x)
        if bucket > bs:
            self.static_in[bs:bucket].zero_()  # padding rows: computed, then dropped
        graph, out = self.graphs[bucket]
        graph.replay()
        return out[:bs].clone()  # the next replay of this bucket overwrites `out`


def prepare(weights: dict, device: str):
    layers = weights["layers"]
    with torch.inference_mode():
        return BucketedGraphs(layers, layers[0][0].shape[1], device)


def forward(model, xs: list[torch.Tensor]) -> torch.Tensor:
    with torch.inference_mode():
        return torch.cat([model(x) for x in xs])
