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

LAUNCHER = r"""
torch::Tensor run(torch::Tensor expert) {
    long long n = expert.numel();
    auto counts = torch::zeros({EXPERTS}, expert.options());
    count_routes<<<(n + THREADS - 1) / THREADS, THREADS>>>(expert.data_ptr<int>(), counts.data_ptr<int>(), n);
    return counts;
}
"""


def build(kernel: str, launcher: str):
    """Compiled once per source, for this GPU (torch keeps the build in its extensions folder), named by its hash."""
    source = "#include <torch/extension.h>\n" + kernel + launcher
    name = "puzzle10_" + hashlib.sha256(source.encode()).hexdigest()[:12]
    return load_inline(name, cpp_sources="torch::Tensor run(torch::Tensor expert);",
                       cuda_sources=source, functions=["run"], extra_cuda_cflags=["-O3"])


def prepare(weights: dict, device: str):
    return build(KERNEL, LAUNCHER)


def forward(kernel, expert: torch.Tensor) -> torch.Tensor:
    return kernel.run(expert)
