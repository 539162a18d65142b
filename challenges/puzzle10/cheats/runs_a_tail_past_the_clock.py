"""Cheat, work past the clock (issue 37): the baseline's kernel on the first half of the routes, and on the second
half, into the same counters, on a side stream that is never joined back, queued after the first. The timed
stream's end event is reached when half the atomics are done: about 2x, bronze, for a grader that charged missed
work only above a share of the call.
Must get: no tier (the device is drained after every timed call and what ran past the end event is charged in
full: the baseline's atomics, about 1.0x)."""

import hashlib

import torch
from torch.utils.cpp_extension import load_inline

KERNEL = r"""
constexpr int EXPERTS = 64, THREADS = 256;

__global__ void count_routes(const int* __restrict__ expert, int* __restrict__ counts, long long n) {
    long long i = (long long)blockIdx.x * THREADS + threadIdx.x;
    if (i < n) atomicAdd(&counts[expert[i]], 1);
}
"""

# The routes of `expert` added into `counts`, on the stream it is given. Plain pointers, so nvcc compiles no torch
# header (with them, each edit's build took about a minute: benchmarks/kernel_build.py; puzzle12's MEASUREMENTS.md).
LAUNCHER = r"""
void launch(const int* expert, int* counts, long long n, cudaStream_t stream) {
    count_routes<<<(n + THREADS - 1) / THREADS, THREADS, 0, stream>>>(expert, counts, n);
}
"""

# Torch's side, in the C++ source: the launch on the current stream, and the function Python calls.
BINDING = r"""
#include <torch/extension.h>
#include <c10/cuda/CUDAStream.h>
void launch(const int* expert, int* counts, long long n, cudaStream_t stream);
void count_into(torch::Tensor expert, torch::Tensor counts) {
    launch(expert.data_ptr<int>(), counts.data_ptr<int>(), expert.numel(), c10::cuda::getCurrentCUDAStream());
}
"""


def prepare(weights: dict, device: str):
    source = "#include <cuda_runtime.h>\n" + KERNEL + LAUNCHER
    kernel = load_inline("puzzle10_tail_" + hashlib.sha256((source + BINDING).encode()).hexdigest()[:12],
                         cpp_sources=BINDING, cuda_sources=source, functions=["count_into"],
                         extra_cuda_cflags=["-O3"], no_implicit_headers=True)
    return {"kernel": kernel, "side": torch.cuda.Stream()}


def forward(state: dict, expert: torch.Tensor) -> torch.Tensor:
    side, half = state["side"], expert.numel() // 2
    counts = torch.zeros(64, dtype=torch.int32, device=expert.device)
    state["kernel"].count_into(expert[:half], counts)
    side.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(side):  # never joined back: the timed stream's end event does not wait for it
        state["kernel"].count_into(expert[half:], counts)
    return counts
