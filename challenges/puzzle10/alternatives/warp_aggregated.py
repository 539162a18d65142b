"""Keep the global counters, but send one atomic per expert per warp: the threads of a warp that hold
the same expert find each other (__match_any_sync), and the lowest of them adds how many they are.
With the routes skewed, a warp's 32 routes name far fewer than 32 experts, so the atomics drop several
times; every one still goes to one of 64 addresses in L2.
"""

import hashlib

import torch
from torch.utils.cpp_extension import load_inline

KERNEL = r"""
constexpr int EXPERTS = 64, THREADS = 256;

__global__ void count_routes(const int* __restrict__ expert, int* __restrict__ counts, long long n) {
    long long i = (long long)blockIdx.x * THREADS + threadIdx.x;
    unsigned active = __ballot_sync(0xffffffffu, i < n);
    if (i >= n) return;
    int e = expert[i];
    unsigned peers = __match_any_sync(active, e);  // the lanes of this warp that hold the same expert
    if ((threadIdx.x & 31) == __ffs(peers) - 1) atomicAdd(&counts[e], __popc(peers));
}
"""

# Its launch, in the same CUDA source: plain pointers, so nvcc compiles no torch header (with them, each edit's
# build took about a minute: benchmarks/kernel_build.py; puzzle12's MEASUREMENTS.md).
LAUNCHER = r"""
int experts() { return EXPERTS; }  // the counters' length, for the binding
void launch(const int* expert, int* counts, long long n) {
    count_routes<<<(n + THREADS - 1) / THREADS, THREADS>>>(expert, counts, n);
}
"""

# Torch's side, in the C++ source: the output made, the launch called, and the function Python calls.
BINDING = r"""
#include <torch/extension.h>
int experts();
void launch(const int* expert, int* counts, long long n);
torch::Tensor run(torch::Tensor expert) {
    auto counts = torch::zeros({experts()}, expert.options());
    launch(expert.data_ptr<int>(), counts.data_ptr<int>(), expert.numel());
    return counts;
}
"""


def build(kernel: str, launcher: str):
    """Compiled once per source, for this GPU (torch keeps the build in its extensions folder), named by its hash.
    Each source includes only what it needs (no_implicit_headers)."""
    source = "#include <cuda_runtime.h>\n" + kernel + launcher
    name = "puzzle10_" + hashlib.sha256((source + BINDING).encode()).hexdigest()[:12]
    return load_inline(name, cpp_sources=BINDING, cuda_sources=source, functions=["run"],
                       extra_cuda_cflags=["-O3"], no_implicit_headers=True)


def prepare(weights: dict, device: str):
    return build(KERNEL, LAUNCHER)


def forward(kernel, expert: torch.Tensor) -> torch.Tensor:
    return kernel.run(expert)
