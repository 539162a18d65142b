"""The transpose as first written: one thread per output value, the threads of a warp along a row of the
output.
"""

import hashlib

import torch
from torch.utils.cpp_extension import load_inline

# The kernel alone (no torch headers), so `nvcc -Xptxas -v` can report on it anywhere, a GPU-less machine too.
KERNEL = r"""
constexpr int THREADS = 256;

__global__ void __launch_bounds__(THREADS)
transpose(const float* __restrict__ keys, float* __restrict__ out, int tokens, int dim) {
    long long i = (long long)blockIdx.x * THREADS + threadIdx.x;  // out is [dim, tokens]: i = d * tokens + t
    if (i >= (long long)tokens * dim) return;
    int d = i / tokens, t = i % tokens;
    out[i] = keys[(long long)t * dim + d];
}
"""

# Its launch, in the same CUDA source: plain pointers, so nvcc compiles no torch header (with them, each edit's
# build took 55-60 s on an H200, 17-18 s without: benchmarks/kernel_build.py, the puzzle's MEASUREMENTS.md).
LAUNCHER = r"""
void launch(const float* keys, float* out, int tokens, int dim) {
    long long n = (long long)tokens * dim;
    transpose<<<(n + THREADS - 1) / THREADS, THREADS>>>(keys, out, tokens, dim);
}
"""

# Torch's side, in the C++ source: the output made, the launch called, and the function Python calls.
BINDING = r"""
#include <torch/extension.h>
void launch(const float* keys, float* out, int tokens, int dim);
torch::Tensor run(torch::Tensor keys) {
    int tokens = keys.size(0), dim = keys.size(1);
    auto out = torch::empty({dim, tokens}, keys.options());
    launch(keys.data_ptr<float>(), out.data_ptr<float>(), tokens, dim);
    return out;
}
"""


def build(kernel: str, launcher: str):
    """Compiled once per source, for this GPU (torch keeps the build in its extensions folder), named by its hash.
    Each source includes only what it needs (no_implicit_headers)."""
    source = "#include <cuda_runtime.h>\n" + kernel + launcher
    name = "puzzle12_" + hashlib.sha256((source + BINDING).encode()).hexdigest()[:12]
    return load_inline(name, cpp_sources=BINDING, cuda_sources=source, functions=["run"],
                       extra_cuda_cflags=["-O3"], no_implicit_headers=True)


def prepare(weights: dict, device: str):
    return build(KERNEL, LAUNCHER)


def forward(kernel, keys: torch.Tensor) -> torch.Tensor:
    return kernel.run(keys)
