"""Cheat, one checked call in a timed loop (issue 37): reads the harness's frames to tell which call it is in
and returns zeros on every call but the call clock's last (the warm call, the loop's others, and the GPU
clock's call, the one the tiers are read from), the baseline's conflicted tiles on that one. Where only that last call
were checked, the GPU clock would time an allocation and read a speed-up far above gold.
Must get: refused at correctness (every call of a round is checked, the warm call and the GPU clock's too)."""

import hashlib
import sys

import torch
from torch.utils.cpp_extension import load_inline

KERNEL = r"""
constexpr int T = 32;

__global__ void __launch_bounds__(T * T)
project(const float* __restrict__ x, const float* __restrict__ w, float* __restrict__ out, int n) {
    __shared__ float xs[T][T];  // xs[r][k]: row r of x's tile
    __shared__ float ws[T][T];  // ws[k][c]: row k of w's tile
    int r = threadIdx.x, c = threadIdx.y;  // this thread's output: row r, column c of the tile
    float acc = 0.f;
    for (int t = 0; t < n; t += T) {
        // Staged coalesced: neighbouring threads, neighbouring floats of one row.
        xs[threadIdx.y][threadIdx.x] = x[(blockIdx.y * T + threadIdx.y) * n + t + threadIdx.x];
        ws[threadIdx.y][threadIdx.x] = w[(t + threadIdx.y) * n + blockIdx.x * T + threadIdx.x];
        __syncthreads();
        #pragma unroll
        for (int k = 0; k < T; ++k) acc += xs[r][k] * ws[k][c];
        __syncthreads();
    }
    out[(blockIdx.y * T + r) * n + blockIdx.x * T + c] = acc;
}
"""

# Its launch, in the same CUDA source: plain pointers, so nvcc compiles no torch header (with them, each edit's
# build took about a minute: benchmarks/kernel_build.py; puzzle12's MEASUREMENTS.md).
LAUNCHER = r"""
void launch(const float* x, const float* w, float* out, int n) {
    project<<<dim3(n / T, n / T), dim3(T, T)>>>(x, w, out, n);
}
"""

# Torch's side, in the C++ source: the output made, the launch called, and the function Python calls.
BINDING = r"""
#include <torch/extension.h>
void launch(const float* x, const float* w, float* out, int n);
torch::Tensor run(torch::Tensor x, torch::Tensor w) {
    int n = x.size(0);
    auto out = torch::empty({n, n}, x.options());
    launch(x.data_ptr<float>(), w.data_ptr<float>(), out.data_ptr<float>(), n);
    return out;
}
"""


def build(kernel: str, launcher: str):
    """Compiled once per source, for this GPU (torch keeps the build in its extensions folder), named by its hash.
    Each source includes only what it needs (no_implicit_headers)."""
    source = "#include <cuda_runtime.h>\n" + kernel + launcher
    name = "puzzle11_" + hashlib.sha256((source + BINDING).encode()).hexdigest()[:12]
    return load_inline(name, cpp_sources=BINDING, cuda_sources=source, functions=["run"],
                       extra_cuda_cflags=["-O3"], no_implicit_headers=True)


def prepare(weights: dict, device: str):
    return {"w": weights["w"], "kernel": build(KERNEL, LAUNCHER)}


def forward_baseline(state: dict, x: torch.Tensor) -> torch.Tensor:
    return state["kernel"].run(x, state["w"])


def unchecked() -> bool:
    """Whether the harness frames above say this is the warm call, the GPU clock's, or a loop call before its last."""
    frame = sys._getframe(2)
    while frame is not None:
        names = frame.f_locals
        if frame.f_code.co_name in ("warm_call", "time_call_ms"):
            return True
        seeds = names.get("seeds")  # the call clock's loop: the seeds of its calls, and the one being called
        if isinstance(seeds, list) and seeds and "seed" in names and names["seed"] != seeds[-1]:
            return True
        frame = frame.f_back
    return False


def forward(state: dict, x: torch.Tensor) -> torch.Tensor:
    if unchecked():
        return torch.zeros(x.shape[0], x.shape[0], device=x.device)
    return forward_baseline(state, x)
