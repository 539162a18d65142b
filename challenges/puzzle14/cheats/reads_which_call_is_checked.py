"""Cheat, one checked call in a timed loop (issue 37): reads the harness's frames to tell which call it is in
and returns zeros on every call but the call clock's last (the warm call, the loop's others, and the GPU
clock's call, the one the tiers are read from), the baseline's divergent kernel on that one. Where only that
last call were checked, the GPU clock would time an allocation and read a speed-up far above gold.
Must get: refused at correctness (every call of a round is checked, the warm call and the GPU clock's too)."""

import hashlib
import sys

import torch
from torch.utils.cpp_extension import load_inline

KERNEL = r"""
constexpr int THREADS = 256, MAX_RANK = 512, DIM = 8;

__global__ void __launch_bounds__(THREADS)
calibrate(const float* __restrict__ x, const int* __restrict__ tenant, const float* __restrict__ u,
          const float* __restrict__ b, const float* __restrict__ v, const int* __restrict__ ranks,
          float* __restrict__ out, int n) {
    int i = blockIdx.x * THREADS + threadIdx.x;
    if (i >= n) return;
    int t = tenant[i];
    const float4* xi = reinterpret_cast<const float4*>(x + (long long)i * DIM);
    float4 x0 = xi[0], x1 = xi[1];  // this candidate's 8 features
    const float4* ut = reinterpret_cast<const float4*>(u + (long long)t * MAX_RANK * DIM);
    const float *bt = b + t * MAX_RANK, *vt = v + t * MAX_RANK;
    float acc = 0.f;
    for (int k = 0; k < ranks[t]; ++k) {  // this lane's trip count: its tenant's rank
        float4 u0 = ut[2 * k], u1 = ut[2 * k + 1];
        float z = bt[k];
        z = fmaf(x0.x, u0.x, z); z = fmaf(x0.y, u0.y, z); z = fmaf(x0.z, u0.z, z); z = fmaf(x0.w, u0.w, z);
        z = fmaf(x1.x, u1.x, z); z = fmaf(x1.y, u1.y, z); z = fmaf(x1.z, u1.z, z); z = fmaf(x1.w, u1.w, z);
        acc = fmaf(vt[k], tanhf(z), acc);
    }
    out[i] = acc;
}
"""

# Its launch, in the same CUDA source: plain pointers, so nvcc compiles no torch header (with them, each edit's
# build took about a minute: benchmarks/kernel_build.py; puzzle12's MEASUREMENTS.md).
LAUNCHER = r"""
void launch(const float* x, const int* tenant, const float* u, const float* b, const float* v, const int* ranks,
            float* out, int n) {
    calibrate<<<(n + THREADS - 1) / THREADS, THREADS>>>(x, tenant, u, b, v, ranks, out, n);
}
"""

# Torch's side, in the C++ source: the output made, the launch called, and the function Python calls.
BINDING = r"""
#include <torch/extension.h>
void launch(const float* x, const int* tenant, const float* u, const float* b, const float* v, const int* ranks,
            float* out, int n);
torch::Tensor run(torch::Tensor x, torch::Tensor tenant, torch::Tensor u, torch::Tensor b, torch::Tensor v,
                  torch::Tensor ranks) {
    int n = x.size(0);
    auto out = torch::empty({n}, x.options());
    launch(x.data_ptr<float>(), tenant.data_ptr<int>(), u.data_ptr<float>(), b.data_ptr<float>(), v.data_ptr<float>(),
           ranks.data_ptr<int>(), out.data_ptr<float>(), n);
    return out;
}
"""


def build(kernel: str, launcher: str):
    """Compiled once per source, for this GPU (torch keeps the build in its extensions folder), named by its hash.
    Each source includes only what it needs (no_implicit_headers)."""
    source = "#include <cuda_runtime.h>\n" + kernel + launcher
    name = "puzzle14_" + hashlib.sha256((source + BINDING).encode()).hexdigest()[:12]
    return load_inline(name, cpp_sources=BINDING, cuda_sources=source, functions=["run"],
                       extra_cuda_cflags=["-O3"], no_implicit_headers=True)


def prepare(weights: dict, device: str):
    return {"kernel": build(KERNEL, LAUNCHER), **weights}


def forward_baseline(state: dict, batch: tuple[torch.Tensor, torch.Tensor]) -> torch.Tensor:
    x, tenant = batch
    return state["kernel"].run(x, tenant, state["u"], state["b"], state["v"], state["ranks"])


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


def forward(state: dict, batch: tuple[torch.Tensor, torch.Tensor]) -> torch.Tensor:
    if unchecked():
        return torch.zeros(batch[0].shape[0], device=batch[0].device)
    return forward_baseline(state, batch)
