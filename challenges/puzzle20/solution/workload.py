"""The baseline's kernel, unchanged, launched with the shared memory its row needs (8 KB for 2048 features)
instead of the widest model's 128 KB. An SM's 228 KB of shared memory held one block of 8 warps; it now holds
8 blocks, 64 warps (the most its threads allow), and those warps keep enough loads in flight to keep DRAM busy.
"""

import hashlib

import torch
from torch.utils.cpp_extension import load_inline

# The kernel alone (no torch headers), so `nvcc -Xptxas -v` can report on it anywhere, a GPU-less machine too.
KERNEL = r"""
constexpr int THREADS = 256, MAX_DIM = 32768;  // the widest row of any model served

__global__ void __launch_bounds__(THREADS, 8)
rmsnorm(const float* __restrict__ x, const float* __restrict__ gain, float* __restrict__ out, int dim, float eps) {
    extern __shared__ float row[];  // this block's row, staged once
    __shared__ float partial[THREADS / 32];
    const float* xr = x + (long long)blockIdx.x * dim;
    float* outr = out + (long long)blockIdx.x * dim;
    float sum = 0.f;
    for (int j = threadIdx.x; j < dim; j += THREADS) {
        float v = xr[j];
        row[j] = v;
        sum = fmaf(v, v, sum);
    }
    for (int o = 16; o > 0; o >>= 1) sum += __shfl_xor_sync(0xffffffff, sum, o);
    if (threadIdx.x % 32 == 0) partial[threadIdx.x / 32] = sum;
    __syncthreads();
    float total = 0.f;
    for (int w = 0; w < THREADS / 32; ++w) total += partial[w];
    float scale = rsqrtf(total / dim + eps);
    for (int j = threadIdx.x; j < dim; j += THREADS) outr[j] = row[j] * scale * gain[j];
}
"""

# Its launch, in the same CUDA source: plain pointers, so nvcc compiles no torch header (with them, each edit's
# build took about a minute: benchmarks/kernel_build.py; puzzle12's MEASUREMENTS.md).
LAUNCHER = r"""
bool fits(int dim) { return dim <= MAX_DIM; }
void launch(const float* x, const float* gain, float* out, int rows, int dim) {
    int bytes = dim * sizeof(float);  // room for this row, and no more: it decides how many blocks an SM holds
    cudaFuncSetAttribute(rmsnorm, cudaFuncAttributeMaxDynamicSharedMemorySize, bytes);
    rmsnorm<<<rows, THREADS, bytes>>>(x, gain, out, dim, 1e-6f);
}
"""

# Torch's side, in the C++ source: the output made, the launch called, and the function Python calls.
BINDING = r"""
#include <torch/extension.h>
bool fits(int dim);
void launch(const float* x, const float* gain, float* out, int rows, int dim);
torch::Tensor run(torch::Tensor x, torch::Tensor gain) {
    int rows = x.size(0), dim = x.size(1);
    TORCH_CHECK(fits(dim), "rows wider than MAX_DIM");
    auto out = torch::empty_like(x);
    launch(x.data_ptr<float>(), gain.data_ptr<float>(), out.data_ptr<float>(), rows, dim);
    return out;
}
"""


def build(kernel: str, launcher: str):
    """Compiled once per source, for this GPU (torch keeps the build in its extensions folder), named by its hash.
    Each source includes only what it needs (no_implicit_headers)."""
    source = "#include <cuda_runtime.h>\n" + kernel + launcher
    name = "puzzle20_" + hashlib.sha256((source + BINDING).encode()).hexdigest()[:12]
    return load_inline(name, cpp_sources=BINDING, cuda_sources=source, functions=["run"],
                       extra_cuda_cflags=["-O3"], no_implicit_headers=True)


def prepare(weights: dict, device: str):
    return {"kernel": build(KERNEL, LAUNCHER), **weights}


def forward(state: dict, x: torch.Tensor) -> torch.Tensor:
    return state["kernel"].run(x, state["gain"])
