"""The baseline's kernel and launcher, unchanged, over 8 shares of the features instead of 256: 512 blocks of 1024
features each (about one wave of four blocks an SM on an H100) write 8 MB of partial products where 16384 blocks
wrote 256 MB, and the sum that adds them reads 8 MB instead of 256. The weights' 128 MB are read as before: the
bytes that go are the ones the SMs exchanged through DRAM.
"""

import hashlib

import torch
from torch.utils.cpp_extension import load_inline

SPLITS = 8  # 8192 features / 8: 1024 a block, 64 x 1 x 8 = 512 blocks

KERNEL = r"""
constexpr int T = 64, R = 4, SLAB = 16;  // a T x T tile of out a block, R x R of it a thread; SLAB features at a time
constexpr int THREADS = (T / R) * (T / R);
static_assert(T * SLAB == 4 * THREADS, "a thread stages one float4 of x's tile and one of w's a slab");

__global__ void __launch_bounds__(THREADS)
project(const float* __restrict__ x, const float* __restrict__ w, float* __restrict__ partial,
        int m, int n, int k, int k_per_block) {
    __shared__ __align__(16) float xs[SLAB][T + 4];  // x's tile, feature-major: a thread's R rows are one float4
    __shared__ __align__(16) float ws[SLAB][T];      // w's tile: SLAB features, T columns
    int tx = threadIdx.x % (T / R), ty = threadIdx.x / (T / R);  // this thread's outputs: rows ty*R.., columns tx*R..
    int xr = threadIdx.x / (SLAB / 4), xk = threadIdx.x % (SLAB / 4) * 4;  // the float4 of x this thread stages
    int wk = threadIdx.x / (T / 4), wc = threadIdx.x % (T / 4) * 4;        // and of w
    int row0 = blockIdx.y * T, col0 = blockIdx.x * T, k0 = blockIdx.z * k_per_block;
    float acc[R][R] = {};
    for (int s = k0; s < k0 + k_per_block; s += SLAB) {
        float4 xv = *reinterpret_cast<const float4*>(&x[(long long)(row0 + xr) * k + s + xk]);
        xs[xk][xr] = xv.x; xs[xk + 1][xr] = xv.y; xs[xk + 2][xr] = xv.z; xs[xk + 3][xr] = xv.w;
        *reinterpret_cast<float4*>(&ws[wk][wc]) =
            *reinterpret_cast<const float4*>(&w[(long long)(s + wk) * n + col0 + wc]);  // coalesced along a feature
        __syncthreads();
        #pragma unroll
        for (int kk = 0; kk < SLAB; ++kk) {  // two shared loads of 16 bytes feed 16 multiply-adds
            float4 a = *reinterpret_cast<const float4*>(&xs[kk][ty * R]);
            float4 b = *reinterpret_cast<const float4*>(&ws[kk][tx * R]);
            float av[R] = {a.x, a.y, a.z, a.w}, bv[R] = {b.x, b.y, b.z, b.w};
            #pragma unroll
            for (int i = 0; i < R; ++i)
                #pragma unroll
                for (int j = 0; j < R; ++j) acc[i][j] = fmaf(av[i], bv[j], acc[i][j]);
        }
        __syncthreads();
    }
    #pragma unroll
    for (int i = 0; i < R; ++i)  // this block's share of out's tile, a float4 a row
        *reinterpret_cast<float4*>(&partial[((long long)blockIdx.z * m + row0 + ty * R + i) * n + col0 + tx * R]) =
            make_float4(acc[i][0], acc[i][1], acc[i][2], acc[i][3]);
}
"""

# Its launch, in the same CUDA source: plain pointers, so nvcc compiles no torch header (with them, each edit's
# build took about a minute: benchmarks/kernel_build.py; puzzle12's MEASUREMENTS.md).
LAUNCHER = r"""
bool fits(int m, int n, int k, int splits) { return m % T == 0 && n % T == 0 && k % (splits * SLAB) == 0; }
void launch(const float* x, const float* w, float* out, int m, int n, int k, int splits) {
    project<<<dim3(n / T, m / T, splits), THREADS>>>(x, w, out, m, n, k, k / splits);
}
"""

# Torch's side, in the C++ source: the output made, the launch called, and the function Python calls.
BINDING = r"""
#include <torch/extension.h>
bool fits(int m, int n, int k, int splits);
void launch(const float* x, const float* w, float* out, int m, int n, int k, int splits);
torch::Tensor run(torch::Tensor x, torch::Tensor w, int64_t splits) {
    int m = x.size(0), k = x.size(1), n = w.size(1);
    TORCH_CHECK(fits(m, n, k, splits), "the sizes must divide into tiles and splits");
    TORCH_CHECK(x.is_contiguous() && w.is_contiguous(), "x and w are read as float4s of rows: contiguous, please");
    auto out = torch::empty({splits, m, n}, x.options());  // one partial product a share of the features
    launch(x.data_ptr<float>(), w.data_ptr<float>(), out.data_ptr<float>(), m, n, k, splits);
    return out;
}
"""


def build(kernel: str, launcher: str):
    """Compiled once per source, for this GPU (torch keeps the build in its extensions folder), named by its hash.
    Each source includes only what it needs (no_implicit_headers)."""
    source = "#include <cuda_runtime.h>\n" + kernel + launcher
    name = "puzzle21_" + hashlib.sha256((source + BINDING).encode()).hexdigest()[:12]
    return load_inline(name, cpp_sources=BINDING, cuda_sources=source, functions=["run"],
                       extra_cuda_cflags=["-O3"], no_implicit_headers=True)


def prepare(weights: dict, device: str):
    return {"kernel": build(KERNEL, LAUNCHER), **weights}


def forward(state: dict, x: torch.Tensor) -> torch.Tensor:
    return state["kernel"].run(x, state["w"], SPLITS).sum(0)  # the partial products, added in a fixed order
