"""Reference solution: the four fp8 layers in one CUDA graph, each run with a hand-picked split-K GEMM.

Eager, every GemLite call pays ~0.3 ms of host dispatch for a ~30 µs kernel: the
graph removes that. Then the kernel choice: at M=128 GemLite switches to its GEMM
kernel (M >= 64), and its H100 table has no entry for bf16 x fp8 (type id 108), so
triton autotunes. On the H100 the split-K kernel below is ~1.35x faster than the
best GEMM config for 4096x4096 (challenges/puzzle3/EXPLORATION.md). Its config is
pinned in GemLite's table: split-K zeroes its output in a pre-hook, which triton
cannot store on disk, so left to autotune it re-tunes in every process, and under
a profiler it can pick another config than the timed runs.
"""

import json
import tempfile

import gemlite
import torch
from gemlite.helper import A16W8_FP8

# GemLite's key: (M bucket, N, K, group size, elements per sample, type id = fp16/bf16 * 100 + 8 bits)
SPLIT_K_128 = {"(128, 4096, 4096, 4096, 1, 108)": {
    "BLOCK_SIZE_M": 64, "BLOCK_SIZE_N": 128, "BLOCK_SIZE_K": 64, "GROUP_SIZE_M": 8, "SPLIT_K": 4,
    "A_load_order": 2, "num_warps": 8, "num_stages": 5, "num_ctas": 1}}


def _pin_split_k() -> None:
    with tempfile.NamedTemporaryFile("w", suffix=".json") as f:
        json.dump({"GEMM_SPLITK": SPLIT_K_128}, f)
        f.flush()
        gemlite.load_config(f.name)


def prepare(weights: dict, device: str):
    _pin_split_k()
    layers = [A16W8_FP8(device=device, dtype=torch.bfloat16).from_weights(w.clone()) for w in weights["weights"]]
    static_x = torch.zeros(128, weights["weights"][0].shape[1], dtype=torch.bfloat16, device=device)

    def run():
        h = static_x
        for layer in layers:
            h = layer.forward_manual(h, matmul_type="GEMM_SPLITK")
        return h

    with torch.inference_mode():
        run()  # compiles the pinned config, outside any capture
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
