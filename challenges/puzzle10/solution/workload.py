"""Count where the contention is cheap: each warp keeps its own 64 counters in shared memory (atomics
on the SM, and no two warps share a counter), the block adds its warps' counts, and only then does it
touch the global counters, once per expert. A grid of a few blocks per SM strides over the routes, so
16M global atomics become 64 per block, a few tens of thousands in all, spread over time.
"""

import hashlib

import torch
from torch.utils.cpp_extension import load_inline

KERNEL = r"""
constexpr int EXPERTS = 64, THREADS = 256, WARPS = THREADS / 32;

__global__ void __launch_bounds__(THREADS)
count_routes(const int* __restrict__ expert, int* __restrict__ counts, long long n) {
    __shared__ int local[WARPS][EXPERTS];  // one histogram per warp: contention only inside a warp
    for (int j = threadIdx.x; j < WARPS * EXPERTS; j += THREADS) (&local[0][0])[j] = 0;
    __syncthreads();
    int* mine = local[threadIdx.x / 32];
    for (long long i = (long long)blockIdx.x * THREADS + threadIdx.x; i < n; i += (long long)gridDim.x * THREADS)
        atomicAdd(&mine[expert[i]], 1);
    __syncthreads();
    for (int e = threadIdx.x; e < EXPERTS; e += THREADS) {
        int total = 0;
        for (int w = 0; w < WARPS; ++w) total += local[w][e];
        if (total) atomicAdd(&counts[e], total);  // one global atomic per expert per block
    }
}
"""

# Its launch, in the same CUDA source: plain pointers, so nvcc compiles no torch header (with them, each edit's
# build took about a minute: benchmarks/kernel_build.py; puzzle12's MEASUREMENTS.md).
LAUNCHER = r"""
int experts() { return EXPERTS; }  // the counters' length, for the binding
void launch(const int* expert, int* counts, long long n) {
    int device, sms;
    cudaGetDevice(&device);
    cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, device);
    count_routes<<<sms * 8, THREADS>>>(expert, counts, n);  // a full wave, striding
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
