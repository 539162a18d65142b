"""Cheat, one checked call in a timed loop (issue 37): reads the harness's frames to tell which call it is in
and returns zeros on every call but the call clock's last (the warm call, the loop's others, and the GPU
clock's call, the one the tiers are read from), the baseline's scores on that one. Where only that last call
were checked, the GPU clock would time an allocation and read a speed-up far above gold.
Must get: refused at correctness (every call of a round is checked, the warm call and the GPU clock's too)."""

import hashlib
import sys

import torch
from torch.utils.cpp_extension import load_inline

KERNEL = r"""
#include <cuda_bf16.h>

constexpr int THREADS = 256, WARPS = THREADS / 32, DIM = 128, CHUNK = 256, GROUP = 8;

__global__ void __launch_bounds__(THREADS)
scores(const __nv_bfloat16* __restrict__ q, const __nv_bfloat16* __restrict__ k, float* __restrict__ out,
       int batch, int kv_heads, int seq, float scale) {
    int id = blockIdx.x, chunks = seq / CHUNK;  // this block's (member, request, key head, chunk)
    int chunk = id % chunks; id /= chunks;
    int kvh = id % kv_heads; id /= kv_heads;
    int b = id % batch; id /= batch;
    int member = id;  // slowest: a group's 8 heads are a whole pass of the keys apart
    int h = kvh * GROUP + member, lane = threadIdx.x % 32, warp = threadIdx.x / 32;
    long long head = (long long)b * kv_heads * GROUP + h;
    const __nv_bfloat162* qh = reinterpret_cast<const __nv_bfloat162*>(q + head * DIM) + lane * 2;
    float2 q01 = __bfloat1622float2(qh[0]), q23 = __bfloat1622float2(qh[1]);  // this lane's 4 of 128
    const __nv_bfloat16* keys = k + ((long long)b * kv_heads + kvh) * seq * DIM;
    for (int s = chunk * CHUNK + warp; s < (chunk + 1) * CHUNK; s += WARPS) {
        const __nv_bfloat162* row = reinterpret_cast<const __nv_bfloat162*>(keys + (long long)s * DIM) + lane * 2;
        float2 k01 = __bfloat1622float2(row[0]), k23 = __bfloat1622float2(row[1]);
        float dot = q01.x * k01.x + q01.y * k01.y + q23.x * k23.x + q23.y * k23.y;
        for (int offset = 16; offset > 0; offset /= 2) dot += __shfl_xor_sync(0xffffffffu, dot, offset);
        if (lane == 0) out[head * seq + s] = dot * scale;
    }
}
"""

# Its launch, in the same CUDA source: plain pointers, so nvcc compiles no torch header (with them, each edit's
# build took about a minute: benchmarks/kernel_build.py; puzzle12's MEASUREMENTS.md).
LAUNCHER = r"""
int group() { return GROUP; }  // query heads a key head, for the binding
void launch(const void* q, const void* k, float* out, int batch, int kv_heads, int seq) {
    scores<<<batch * kv_heads * GROUP * (seq / CHUNK), THREADS>>>(static_cast<const __nv_bfloat16*>(q),
        static_cast<const __nv_bfloat16*>(k), out, batch, kv_heads, seq, 1.0f / sqrtf((float)DIM));
}
"""

# Torch's side, in the C++ source: the output made, the launch called, and the function Python calls.
BINDING = r"""
#include <torch/extension.h>
int group();
void launch(const void* q, const void* k, float* out, int batch, int kv_heads, int seq);
torch::Tensor run(torch::Tensor q, torch::Tensor k) {
    int batch = k.size(0), kv_heads = k.size(1), seq = k.size(2);
    auto out = torch::empty({batch, kv_heads * group(), seq}, q.options().dtype(torch::kFloat32));
    launch(q.data_ptr(), k.data_ptr(), out.data_ptr<float>(), batch, kv_heads, seq);
    return out;
}
"""


def build(kernel: str, launcher: str):
    """Compiled once per source, for this GPU (torch keeps the build in its extensions folder), named by its hash.
    Each source includes only what it needs (no_implicit_headers)."""
    source = "#include <cuda_runtime.h>\n" + kernel + launcher
    name = "puzzle17_" + hashlib.sha256((source + BINDING).encode()).hexdigest()[:12]
    return load_inline(name, cpp_sources=BINDING, cuda_sources=source, functions=["run"],
                       extra_cuda_cflags=["-O3"], no_implicit_headers=True)


def prepare(weights: dict, device: str):
    return {"kernel": build(KERNEL, LAUNCHER), "k": weights["k"]}


def forward_baseline(state: dict, q: torch.Tensor) -> torch.Tensor:
    return state["kernel"].run(q, state["k"])


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


def forward(state: dict, q: torch.Tensor) -> torch.Tensor:
    if unchecked():
        return torch.zeros(q.shape[0], q.shape[1], state["k"].shape[2], device=q.device)
    return forward_baseline(state, q)
