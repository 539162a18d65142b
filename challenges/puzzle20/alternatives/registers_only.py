"""No shared row at all: each of a block's 256 threads keeps its 8 values of the row in registers between the
two passes (the width known when the kernel is compiled), so a block asks for 32 bytes of shared memory, the
warps' partial sums, and an SM holds as many blocks as its threads allow.
"""

import hashlib

import torch
from torch.utils.cpp_extension import load_inline

KERNEL = r"""
constexpr int THREADS = 256, DIM = 2048, PER_THREAD = DIM / THREADS;

__global__ void __launch_bounds__(THREADS)
rmsnorm(const float* __restrict__ x, const float* __restrict__ gain, float* __restrict__ out, float eps) {
    __shared__ float partial[THREADS / 32];
    const float* xr = x + (long long)blockIdx.x * DIM;
    float* outr = out + (long long)blockIdx.x * DIM;
    float v[PER_THREAD], sum = 0.f;
    #pragma unroll
    for (int k = 0; k < PER_THREAD; ++k) {  // all 8 loads issued before the first is used
        v[k] = xr[k * THREADS + threadIdx.x];
        sum = fmaf(v[k], v[k], sum);
    }
    for (int o = 16; o > 0; o >>= 1) sum += __shfl_xor_sync(0xffffffff, sum, o);
    if (threadIdx.x % 32 == 0) partial[threadIdx.x / 32] = sum;
    __syncthreads();
    float total = 0.f;
    for (int w = 0; w < THREADS / 32; ++w) total += partial[w];
    float scale = rsqrtf(total / DIM + eps);
    #pragma unroll
    for (int k = 0; k < PER_THREAD; ++k) {
        int j = k * THREADS + threadIdx.x;
        outr[j] = v[k] * scale * gain[j];
    }
}
"""

# Its launch, in the same CUDA source: plain pointers, so nvcc compiles no torch header (with them, each edit's
# build took about a minute: benchmarks/kernel_build.py; puzzle12's MEASUREMENTS.md).
LAUNCHER = r"""
bool fits(int dim) { return dim == DIM; }
void launch(const float* x, const float* gain, float* out, int rows, int dim) {
    rmsnorm<<<rows, THREADS>>>(x, gain, out, 1e-6f);
}
"""

# Torch's side, in the C++ source: the output made, the launch called, and the function Python calls.
BINDING = r"""
#include <torch/extension.h>
bool fits(int dim);
void launch(const float* x, const float* gain, float* out, int rows, int dim);
torch::Tensor run(torch::Tensor x, torch::Tensor gain) {
    int rows = x.size(0), dim = x.size(1);
    TORCH_CHECK(fits(dim), "compiled for rows of DIM features");
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
