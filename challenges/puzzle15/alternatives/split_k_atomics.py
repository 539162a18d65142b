"""Split-K with atomics: the tiles' features cut into 16 splits, as the reference does, but each block adds
its partial tile straight into the (zeroed) output with atomicAdd at L2, so no partial products are
written and no second pass adds them. The order in which the 16 partials arrive changes from call to
call: the sums differ from the baseline's within fp32 rounding.
"""

import hashlib

import torch
from torch.utils.cpp_extension import load_inline

SPLITS = 16

KERNEL = r"""
constexpr int T = 32, SLAB = 512;  // a 32 x 32 tile of out a block; the features staged SLAB at a time
constexpr int SHARED_BYTES = (T * (SLAB + 1) + SLAB * (T + 1)) * 4;  // 133 KB

__global__ void __launch_bounds__(T * T, 1)
project(const float* __restrict__ x, const float* __restrict__ w, float* __restrict__ out,
        int m, int n, int k, int k_per_block) {
    extern __shared__ float smem[];
    float* xs = smem;                   // xs[rr * (SLAB + 1) + kk]: row rr of x's tile, SLAB features
    float* ws = smem + T * (SLAB + 1);  // ws[kk * (T + 1) + cc]: SLAB rows of w's tile, T columns
    int r = threadIdx.y, c = threadIdx.x, tid = r * T + c;  // this thread's output: row r, column c of the tile
    int row0 = blockIdx.y * T, col0 = blockIdx.x * T, k0 = blockIdx.z * k_per_block;
    float acc = 0.f;
    for (int s = k0; s < k0 + k_per_block; s += SLAB) {
        for (int e = tid; e < T * SLAB; e += T * T)  // x: a warp along one row's features, coalesced
            xs[(e / SLAB) * (SLAB + 1) + e % SLAB] = x[(long long)(row0 + e / SLAB) * k + s + e % SLAB];
        for (int e = tid; e < SLAB * T; e += T * T)  // w: a warp along one row's 32 columns, coalesced
            ws[(e / T) * (T + 1) + e % T] = w[(long long)(s + e / T) * n + col0 + e % T];
        __syncthreads();
        #pragma unroll 8
        for (int kk = 0; kk < SLAB; ++kk)  // xs: one address a warp (a broadcast); ws: 32 banks
            acc = fmaf(xs[r * (SLAB + 1) + kk], ws[kk * (T + 1) + c], acc);
        __syncthreads();
    }
    atomicAdd(&out[(long long)(row0 + r) * n + col0 + c], acc);  // the splits meet in L2, in any order
}
"""

# Its launch, in the same CUDA source: plain pointers, so nvcc compiles no torch header (with them, each edit's
# build took about a minute: benchmarks/kernel_build.py; puzzle12's MEASUREMENTS.md).
LAUNCHER = r"""
void launch(const float* x, const float* w, float* out, int m, int n, int k, int splits) {
    cudaFuncSetAttribute(project, cudaFuncAttributeMaxDynamicSharedMemorySize, SHARED_BYTES);
    project<<<dim3(n / T, m / T, splits), dim3(T, T), SHARED_BYTES>>>(x, w, out, m, n, k, k / splits);
}
"""

# Torch's side, in the C++ source: the output made, the launch called, and the function Python calls.
BINDING = r"""
#include <torch/extension.h>
void launch(const float* x, const float* w, float* out, int m, int n, int k, int splits);
torch::Tensor run(torch::Tensor x, torch::Tensor w, int64_t splits) {
    int m = x.size(0), k = x.size(1), n = w.size(1);
    auto out = torch::zeros({m, n}, x.options());
    launch(x.data_ptr<float>(), w.data_ptr<float>(), out.data_ptr<float>(), m, n, k, splits);
    return out;
}
"""


def build(kernel: str, launcher: str):
    """Compiled once per source, for this GPU (torch keeps the build in its extensions folder), named by its hash.
    Each source includes only what it needs (no_implicit_headers)."""
    source = "#include <cuda_runtime.h>\n" + kernel + launcher
    name = "puzzle15_" + hashlib.sha256((source + BINDING).encode()).hexdigest()[:12]
    return load_inline(name, cpp_sources=BINDING, cuda_sources=source, functions=["run"],
                       extra_cuda_cflags=["-O3"], no_implicit_headers=True)


def prepare(weights: dict, device: str):
    return {"kernel": build(KERNEL, LAUNCHER), **weights}


def forward(state: dict, x: torch.Tensor) -> torch.Tensor:
    return state["kernel"].run(x, state["w"], SPLITS)
