"""Reference solution: a Triton GEMV that reads the fp8 weights directly, eight launches replayed as one CUDA graph.

The baseline spends most of each layer materialising a bf16 copy of the weight:
three elementwise kernels (60 + 54 + 34 µs on the H100) before a 12 µs bf16 GEMM.
Here each weight byte is read once: the kernel loads fp8, converts in registers,
accumulates in fp32 and applies the per-row scale once per output.
Measured numbers: challenges/puzzle1/MEASUREMENTS.md.
"""

import torch
import triton
import triton.language as tl

# Best of the sweeps in challenges/puzzle1/sweeps/variants.py (H100, M=1, K=N=4096, 8 layers in a graph;
# MEASUREMENTS.md): 0.103 ms a call. BLOCK_N 1 to 16 with 4 warps all land within ~8% of it;
# BLOCK_K=256 or BLOCK_N=32 were slower (0.14-0.15 ms).
BLOCK_N = 4
BLOCK_K = 512
NUM_WARPS = 4
STAGES = 0  # 0: K loop unrolled at compile time; n > 0: a software-pipelined loop n stages deep
# The weight is read once per call, so keep it from pushing other lines out of L2: ~10% faster
# in two runs (0.098 / 0.103 ms against 0.108 / 0.114 ms). STAGES=4 gains about as much without
# the hint, nothing on top of it.
EVICT_FIRST = True
# The GEMV reads the weight once per row of x; beyond a few rows one dequantised GEMM is the
# right tool (not measured: the puzzle times M=1 only).
MAX_GEMV_ROWS = 8


@triton.jit
def _fp8_tile(acc, x_ptr, w_ptr, rows, cols, k0, stride_wn, EVICT_FIRST: tl.constexpr):
    x = tl.load(x_ptr + k0 + cols).to(tl.float32)
    w_ptrs = w_ptr + rows[:, None] * stride_wn + (k0 + cols)[None, :]
    if EVICT_FIRST:
        w = tl.load(w_ptrs, eviction_policy="evict_first")
    else:
        w = tl.load(w_ptrs)
    # fp8 -> fp32 in registers: the weight never exists in bf16 in memory.
    return acc + w.to(tl.float32) * x[None, :]


@triton.jit
def _fp8_gemv_kernel(x_ptr, w_ptr, scale_ptr, y_ptr, stride_xm, stride_wn, stride_ym,
                     K: tl.constexpr, BLOCK_N: tl.constexpr, BLOCK_K: tl.constexpr,
                     STAGES: tl.constexpr, EVICT_FIRST: tl.constexpr):
    # One program: BLOCK_N output features of one row of x, over the whole of K.
    rows = tl.program_id(0) * BLOCK_N + tl.arange(0, BLOCK_N)
    x_ptr += tl.program_id(1) * stride_xm
    cols = tl.arange(0, BLOCK_K)
    # A 2-D accumulator: plain FMAs in the loop, one cross-lane reduction at the end.
    acc = tl.zeros((BLOCK_N, BLOCK_K), dtype=tl.float32)
    if STAGES == 0:
        # Unrolled (K is a constexpr), so every tile's load can be issued before the
        # first one returns: a GEMV needs many bytes in flight per SM to reach full bandwidth.
        for k0 in tl.static_range(0, K, BLOCK_K):
            acc = _fp8_tile(acc, x_ptr, w_ptr, rows, cols, k0, stride_wn, EVICT_FIRST)
    else:
        for k0 in tl.range(0, K, BLOCK_K, num_stages=STAGES):
            acc = _fp8_tile(acc, x_ptr, w_ptr, rows, cols, k0, stride_wn, EVICT_FIRST)
    y = tl.sum(acc, axis=1) * tl.load(scale_ptr + rows)
    tl.store(y_ptr + tl.program_id(1) * stride_ym + rows, y.to(tl.bfloat16))


def quantize_rowwise(w: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """float8_e4m3fn weight with one fp32 scale per output feature (amax / 448), as torchao does."""
    amax = w.float().abs().amax(dim=1, keepdim=True).clamp_min(1e-12)
    scale = amax / torch.finfo(torch.float8_e4m3fn).max
    return (w.float() / scale).to(torch.float8_e4m3fn).contiguous(), scale.reshape(-1).contiguous()


def fp8_linear(x: torch.Tensor, w_fp8: torch.Tensor, scale: torch.Tensor, block_n: int = BLOCK_N,
               block_k: int = BLOCK_K, num_warps: int = NUM_WARPS, stages: int = STAGES,
               evict_first: bool = EVICT_FIRST) -> torch.Tensor:
    """x @ (w_fp8 * scale).T in bf16, reading the fp8 weight once."""
    n, k = w_fp8.shape
    x2 = x.reshape(-1, k)
    if x2.shape[0] > MAX_GEMV_ROWS or n % block_n or k % block_k:
        return x @ (w_fp8.to(torch.bfloat16) * scale[:, None].to(torch.bfloat16)).T
    x2 = x2.contiguous()
    y = torch.empty(x2.shape[0], n, dtype=torch.bfloat16, device=x.device)
    grid = (n // block_n, x2.shape[0])
    _fp8_gemv_kernel[grid](x2, w_fp8, scale, y, x2.stride(0), w_fp8.stride(0), y.stride(0),
                           K=k, BLOCK_N=block_n, BLOCK_K=block_k, STAGES=stages, EVICT_FIRST=evict_first,
                           num_warps=num_warps)
    return y.reshape(*x.shape[:-1], n)


class Fp8Decoder:
    """The eight fp8 layers; at the puzzle's input shape, one CUDA graph replay per call."""

    def __init__(self, weights: list, device: str, use_graph: bool = True, **kernel_config):
        self.layers = [quantize_rowwise(w.to(device)) for w in weights]
        self.kernel_config = kernel_config
        self.graph = None
        if use_graph:
            self._capture(weights[0].shape[1], device)

    def run_layers(self, x: torch.Tensor) -> torch.Tensor:
        for w_fp8, scale in self.layers:
            x = fp8_linear(x, w_fp8, scale, **self.kernel_config)
        return x

    def _capture(self, in_features: int, device: str):
        # Launched eagerly, each layer costs 25-60 µs of host time (Python, Triton's launcher) against
        # 8.5 µs of GPU time: 0.46-0.49 ms a call, slower than bf16 eager (0.33-0.35 ms). One graph
        # replay launches all eight: 0.10 ms a call, of which 70 µs is kernel time.
        self.static_x = torch.randn(1, in_features, dtype=torch.bfloat16, device=device)
        side = torch.cuda.Stream()
        side.wait_stream(torch.cuda.current_stream())
        with torch.cuda.stream(side):
            self.run_layers(self.static_x)  # JIT-compiles the kernel outside the capture
        torch.cuda.current_stream().wait_stream(side)
        self.graph = torch.cuda.CUDAGraph()
        with torch.cuda.graph(self.graph):
            self.static_out = self.run_layers(self.static_x)
        torch.cuda.synchronize()

    def __call__(self, x: torch.Tensor) -> torch.Tensor:
        if self.graph is None or x.shape != self.static_x.shape or x.dtype != self.static_x.dtype:
            return self.run_layers(x)
        self.static_x.copy_(x)
        self.graph.replay()
        # The graph writes the same buffer on every replay: hand back a copy the caller owns.
        return self.static_out.clone()


def prepare(weights: dict, device: str, use_graph: bool = True, **kernel_config):
    return Fp8Decoder(weights["weights"], device, use_graph=use_graph, **kernel_config)


def forward(state: Fp8Decoder, x: torch.Tensor) -> torch.Tensor:
    return state(x)
