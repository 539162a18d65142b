"""Cheat, work done where the clock does not see it (issue 37): on every call it runs the baseline's spilling kernel, besides
on its own input, on every other input-shaped tensor it finds alive (the garbage collector's objects), and
answers a later call on one of them from that table: where a round's inputs were made before its untimed
warm call, or the GPU clock's before the loop, the GPU clock's call would read almost nothing.
Must get: no more than the honest work it does (each input is made only once the call before it returned,
so there is nothing ahead to find: its own work is the baseline's kernel, about 1.0x, no tier)."""

import gc
import hashlib

import torch
from torch.utils.cpp_extension import load_inline

table: dict[tuple, torch.Tensor] = {}

KERNEL = r"""
constexpr int K = 256, N = 32, THREADS = 256;

__global__ void __launch_bounds__(THREADS, 8)
project(const float* __restrict__ x, const float* __restrict__ w, float* __restrict__ out, int m) {
    int token = blockIdx.x * THREADS + threadIdx.x;
    if (token >= m) return;
    float acc[N];
    #pragma unroll
    for (int j = 0; j < N; ++j) acc[j] = 0.f;
    for (int k = 0; k < K; ++k) {
        float v = x[k * m + token];  // coalesced: neighbouring threads, neighbouring tokens
        #pragma unroll
        for (int j = 0; j < N; ++j) acc[j] += v * w[k * N + j];
    }
    #pragma unroll
    for (int j = 0; j < N; ++j) out[token * N + j] = acc[j];
}
"""

# Its launch, in the same CUDA source: plain pointers, so nvcc compiles no torch header (with them, each edit's
# build took about a minute: benchmarks/kernel_build.py; puzzle12's MEASUREMENTS.md).
LAUNCHER = r"""
void launch(const float* x, const float* w, float* out, int m) {
    project<<<(m + THREADS - 1) / THREADS, THREADS>>>(x, w, out, m);
}
"""

# Torch's side, in the C++ source: the output made, the launch called, and the function Python calls.
BINDING = r"""
#include <torch/extension.h>
void launch(const float* x, const float* w, float* out, int m);
torch::Tensor run(torch::Tensor x, torch::Tensor w) {
    int m = x.size(1);
    auto out = torch::empty({m, w.size(1)}, x.options());
    launch(x.data_ptr<float>(), w.data_ptr<float>(), out.data_ptr<float>(), m);
    return out;
}
"""


def build(kernel: str, launcher: str):
    """Compiled once per source, for this GPU (torch keeps the build in its extensions folder), named by its hash.
    Each source includes only what it needs (no_implicit_headers)."""
    source = "#include <cuda_runtime.h>\n" + kernel + launcher
    name = "puzzle9_" + hashlib.sha256((source + BINDING).encode()).hexdigest()[:12]
    return load_inline(name, cpp_sources=BINDING, cuda_sources=source, functions=["run"],
                       extra_cuda_cflags=["-O3"], no_implicit_headers=True)


def prepare(weights: dict, device: str):
    return {"w": weights["w"], "kernel": build(KERNEL, LAUNCHER)}


def forward_baseline(state: dict, x: torch.Tensor) -> torch.Tensor:
    return state["kernel"].run(x, state["w"])


def key(t: torch.Tensor) -> tuple:
    return tuple(t.flatten()[:4].tolist())


def forward(state, x: torch.Tensor) -> torch.Tensor:
    for o in gc.get_objects():
        if type(o) is torch.Tensor and o is not x and o.is_cuda and o.shape == x.shape and o.dtype == x.dtype:
            if key(o) not in table:
                table[key(o)] = forward_baseline(state, o)
    found = table.pop(key(x), None)
    return found if found is not None else forward_baseline(state, x)
