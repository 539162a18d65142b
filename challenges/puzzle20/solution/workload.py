"""The baseline's kernel, unchanged, launched with the shared memory its row needs (8 KB for 2048 features)
instead of the widest model's 128 KB. An SM's 228 KB of shared memory held one block of 8 warps; it now holds
8 blocks, 64 warps (the most its threads allow), and those warps keep enough loads in flight to keep DRAM busy.
"""

import hashlib

import torch
from torch.utils.cpp_extension import load_inline

# The kernel alone (no torch headers), so `nvcc -Xptxas -v` can report on it anywhere, a GPU-less machine too.
KERNEL = r"""
constexpr int THREADS = 256, MAX_DIM = 32768;  // the widest row of any model served: 128 KB of fp32

__global__ void __launch_bounds__(THREADS, 8)  // at most 32 registers: 8 blocks of 256 threads fit an SM
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

LAUNCHER = r"""
torch::Tensor run(torch::Tensor x, torch::Tensor gain) {
    int rows = x.size(0), dim = x.size(1);
    TORCH_CHECK(dim <= MAX_DIM, "rows wider than MAX_DIM");
    auto out = torch::empty_like(x);
    int bytes = dim * sizeof(float);  // room for this row, and no more: it decides how many blocks an SM holds
    cudaFuncSetAttribute(rmsnorm, cudaFuncAttributeMaxDynamicSharedMemorySize, bytes);
    rmsnorm<<<rows, THREADS, bytes>>>(x.data_ptr<float>(), gain.data_ptr<float>(), out.data_ptr<float>(), dim, 1e-6f);
    return out;
}
"""


def build(kernel: str, launcher: str):
    """Compiled once per source, for this GPU (torch keeps the build in its extensions folder), named by its hash."""
    source = "#include <torch/extension.h>\n" + kernel + launcher
    name = "puzzle20_" + hashlib.sha256(source.encode()).hexdigest()[:12]
    return load_inline(name, cpp_sources="torch::Tensor run(torch::Tensor x, torch::Tensor gain);",
                       cuda_sources=source, functions=["run"], extra_cuda_cflags=["-O3"])


def prepare(weights: dict, device: str):
    return {"kernel": build(KERNEL, LAUNCHER), **weights}


def forward(state: dict, x: torch.Tensor) -> torch.Tensor:
    return state["kernel"].run(x, state["gain"])
