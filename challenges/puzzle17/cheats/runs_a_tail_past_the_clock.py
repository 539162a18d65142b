"""Cheat, work past the clock (issue 37): the baseline's kernel on the first 6 of the 8 requests, and on the last 2
(a quarter of the keys) on a side stream that is never joined back, queued after them. The timed stream's end
event is reached when 6 requests are scored. A grader that charged missed work only above a quarter of the call
read this gold at about 1.35x (gold is 1.3x).
Must get: no tier (the device is drained after every timed call and what ran past the end event is charged in
full: the baseline's work, a few percent less where the last two requests' keys fit in L2: under bronze)."""

import hashlib

import torch
from torch.utils.cpp_extension import load_inline

SIDE_REQUESTS = 2

KERNEL = r"""
#include <cuda_bf16.h>

constexpr int THREADS = 256, WARPS = THREADS / 32, DIM = 128, CHUNK = 256, GROUP = 8;

__global__ void __launch_bounds__(THREADS)
scores(const __nv_bfloat16* __restrict__ q, const __nv_bfloat16* __restrict__ k, float* __restrict__ out,
       int batch, int kv_heads, int seq, float scale) {
    int id = blockIdx.x, chunks = seq / CHUNK;
    int chunk = id % chunks; id /= chunks;
    int kvh = id % kv_heads; id /= kv_heads;
    int b = id % batch; id /= batch;
    int member = id;
    int h = kvh * GROUP + member, lane = threadIdx.x % 32, warp = threadIdx.x / 32;
    long long head = (long long)b * kv_heads * GROUP + h;
    const __nv_bfloat162* qh = reinterpret_cast<const __nv_bfloat162*>(q + head * DIM) + lane * 2;
    float2 q01 = __bfloat1622float2(qh[0]), q23 = __bfloat1622float2(qh[1]);
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

# The scores into `out`, on the stream it is given. Plain pointers, so nvcc compiles no torch header (with them,
# each edit's build took about a minute: benchmarks/kernel_build.py; puzzle12's MEASUREMENTS.md).
LAUNCHER = r"""
void launch(const void* q, const void* k, float* out, int batch, int kv_heads, int seq, cudaStream_t stream) {
    scores<<<batch * kv_heads * GROUP * (seq / CHUNK), THREADS, 0, stream>>>(static_cast<const __nv_bfloat16*>(q),
        static_cast<const __nv_bfloat16*>(k), out, batch, kv_heads, seq, 1.0f / sqrtf((float)DIM));
}
"""

# Torch's side, in the C++ source: the launch on the current stream, and the function Python calls.
BINDING = r"""
#include <torch/extension.h>
#include <c10/cuda/CUDAStream.h>
void launch(const void* q, const void* k, float* out, int batch, int kv_heads, int seq, cudaStream_t stream);
void run_into(torch::Tensor q, torch::Tensor k, torch::Tensor out) {
    launch(q.data_ptr(), k.data_ptr(), out.data_ptr<float>(), k.size(0), k.size(1), k.size(2),
           c10::cuda::getCurrentCUDAStream());
}
"""


def prepare(weights: dict, device: str):
    source = "#include <cuda_runtime.h>\n" + KERNEL + LAUNCHER
    kernel = load_inline("puzzle17_tail_" + hashlib.sha256((source + BINDING).encode()).hexdigest()[:12],
                         cpp_sources=BINDING, cuda_sources=source, functions=["run_into"],
                         extra_cuda_cflags=["-O3"], no_implicit_headers=True)
    return {"kernel": kernel, "k": weights["k"], "side": torch.cuda.Stream()}


def forward(state: dict, q: torch.Tensor) -> torch.Tensor:
    k, side, cut = state["k"], state["side"], q.shape[0] - SIDE_REQUESTS
    out = torch.empty(k.shape[0], q.shape[1], k.shape[2], device=q.device)
    state["kernel"].run_into(q[:cut], k[:cut], out[:cut])
    side.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(side):  # never joined back: the timed stream's end event does not wait for it
        state["kernel"].run_into(q[cut:], k[cut:], out[cut:])
    return out
