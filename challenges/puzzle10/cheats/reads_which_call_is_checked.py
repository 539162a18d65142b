"""Cheat, one checked call in a timed loop (issue 37): reads the harness's frames to tell which call it is in
and returns zero counts on every call but the call clock's last (the warm call, the loop's others, and the GPU
clock's call, the one the tiers are read from), the baseline's atomics on that one. Where only that last call
were checked, the GPU clock would time an allocation and read a speed-up far above gold.
Must get: refused at correctness (every call of a round is checked, the warm call and the GPU clock's too)."""

import hashlib
import sys

import torch
from torch.utils.cpp_extension import load_inline

KERNEL = r"""
constexpr int EXPERTS = 64, THREADS = 256;

__global__ void count_routes(const int* __restrict__ expert, int* __restrict__ counts, long long n) {
    long long i = (long long)blockIdx.x * THREADS + threadIdx.x;
    if (i < n) atomicAdd(&counts[expert[i]], 1);
}
"""

# Its launch, in the same CUDA source: plain pointers, so nvcc compiles no torch header (with them, each edit's
# build took about a minute: benchmarks/kernel_build.py; puzzle12's MEASUREMENTS.md).
LAUNCHER = r"""
int experts() { return EXPERTS; }  // the counters' length, for the binding
void launch(const int* expert, int* counts, long long n) {
    count_routes<<<(n + THREADS - 1) / THREADS, THREADS>>>(expert, counts, n);
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


def forward_baseline(kernel, expert: torch.Tensor) -> torch.Tensor:
    return kernel.run(expert)


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


def forward(kernel, expert: torch.Tensor) -> torch.Tensor:
    if unchecked():
        return torch.zeros(64, dtype=torch.int32, device=expert.device)
    return forward_baseline(kernel, expert)
