"""Cheat, work past the clock (issue 37): the baseline's kernel, but the adapter's 64 columns (8 of the grid's 136
blocks, 6% of the work) run on a side stream that is never joined back, queued after the 128 base blocks. The
timed stream's end event is reached after one wave; the second wave, which costs as much as the first, runs
past it. A grader that charged missed work only above a quarter of the call read this gold at about 2x.
Must get: no tier (the device is drained after every timed call and what ran past the end event is charged in
full: the baseline's two waves, about 1.0x)."""

import hashlib

import torch
from torch.utils.cpp_extension import load_inline

BASE = 1024

KERNEL = r"""
constexpr int T = 32, SLAB = 512;
constexpr int SHARED_BYTES = (T * (SLAB + 1) + SLAB * (T + 1)) * 4;

__global__ void __launch_bounds__(T * T, 1)
project(const float* __restrict__ x, const float* __restrict__ w, float* __restrict__ out, int n, int k) {
    extern __shared__ float smem[];
    float* xs = smem;
    float* ws = smem + T * (SLAB + 1);
    int r = threadIdx.y, c = threadIdx.x, tid = r * T + c;
    int row0 = blockIdx.y * T, col0 = blockIdx.x * T;
    float acc = 0.f;
    for (int s = 0; s < k; s += SLAB) {
        for (int e = tid; e < T * SLAB; e += T * T)
            xs[(e / SLAB) * (SLAB + 1) + e % SLAB] = x[(long long)(row0 + e / SLAB) * k + s + e % SLAB];
        for (int e = tid; e < SLAB * T; e += T * T)
            ws[(e / T) * (T + 1) + e % T] = w[(long long)(s + e / T) * n + col0 + e % T];
        __syncthreads();
        #pragma unroll 8
        for (int kk = 0; kk < SLAB; ++kk)
            acc = fmaf(xs[r * (SLAB + 1) + kk], ws[kk * (T + 1) + c], acc);
        __syncthreads();
    }
    out[(long long)(row0 + r) * n + col0 + c] = acc;
}
"""

# The columns [first, first + count) of out = x @ w, on the stream it is given: w and out offset to the first
# column. Plain pointers, so nvcc compiles no torch header (with them, each edit's build took about a minute:
# benchmarks/kernel_build.py; puzzle12's MEASUREMENTS.md).
LAUNCHER = r"""
void launch(const float* x, const float* w, float* out, int m, int n, int k, int count, cudaStream_t stream) {
    cudaFuncSetAttribute(project, cudaFuncAttributeMaxDynamicSharedMemorySize, SHARED_BYTES);
    project<<<dim3(count / T, m / T), dim3(T, T), SHARED_BYTES, stream>>>(x, w, out, n, k);
}
"""

# Torch's side, in the C++ source: the launch on the current stream, and the function Python calls.
BINDING = r"""
#include <torch/extension.h>
#include <c10/cuda/CUDAStream.h>
void launch(const float* x, const float* w, float* out, int m, int n, int k, int count, cudaStream_t stream);
void run_columns(torch::Tensor x, torch::Tensor w, torch::Tensor out, int64_t first, int64_t count) {
    int m = x.size(0), k = x.size(1), n = w.size(1);
    launch(x.data_ptr<float>(), w.data_ptr<float>() + first, out.data_ptr<float>() + first, m, n, k, count,
           c10::cuda::getCurrentCUDAStream());
}
"""


def prepare(weights: dict, device: str):
    source = "#include <cuda_runtime.h>\n" + KERNEL + LAUNCHER
    kernel = load_inline("puzzle15_tail_" + hashlib.sha256((source + BINDING).encode()).hexdigest()[:12],
                         cpp_sources=BINDING, cuda_sources=source, functions=["run_columns"],
                         extra_cuda_cflags=["-O3"], no_implicit_headers=True)
    return {"kernel": kernel, "w": weights["w"], "side": torch.cuda.Stream()}


def forward(state: dict, x: torch.Tensor) -> torch.Tensor:
    w, side = state["w"], state["side"]
    out = torch.empty(x.shape[0], w.shape[1], device=x.device)
    state["kernel"].run_columns(x, w, out, 0, BASE)
    side.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(side):  # never joined back: the timed stream's end event does not wait for it
        state["kernel"].run_columns(x, w, out, BASE, w.shape[1] - BASE)
    return out
