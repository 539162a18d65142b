"""Puzzle 1 on one CUDA GPU: every variant's latency, speedups and error against bf16 eager.

    PYTHONPATH=<torchao site>:. python challenges/puzzle1/sweeps/variants.py [--rounds 100] [--no-compile] [--reduce-overhead]

Variants: a timing floor (one clone), bf16 eager (the oracle), the torchao fp8 weight-only
baseline, that baseline under torch.compile (eager launches, and replayed from a CUDA
graph), bf16 in a CUDA graph, the reference solution (Triton fp8 GEMV + CUDA graph), its
kernel launched eagerly, and a sweep of the kernel's configs.
Each timed call starts from a cold L2 (a 256 MB buffer zeroed) and an idle GPU, as the
grader's are; rounds interleave the variants in a fresh order each time. Also printed:
time per call with calls queued back to back, the profiler's kernels for a few variants,
and each kernel config's registers and loads. Results: challenges/puzzle1/MEASUREMENTS.md.
"""

from __future__ import annotations

import argparse
import importlib.util
import random
import statistics
import time
import traceback
from pathlib import Path

import torch

PUZZLE = Path(__file__).resolve().parent.parent  # challenges/puzzle1
# (BLOCK_N, BLOCK_K, num_warps, stages, evict_first) tried for the Triton GEMV, all inside the
# CUDA graph. stages 0 = K loop unrolled; n = tl.range(num_stages=n). Earlier sweeps on the H100
# (2026-11-22, in MEASUREMENTS.md) also tried, all slower: unrolled (4,512,4) (16,512,4) (4,1024,4)
# (16,512,8) (8,1024,8) (16,256,4) (8,256,2) (32,256,8); pipelined (8,512,4,3) (16,256,4,4).
KERNEL_CONFIGS = [(4, 512, 4, 0, True), (8, 512, 4, 0, True), (4, 512, 4, 4, True), (8, 512, 4, 4, True),
                  (2, 2048, 4, 0, True), (1, 4096, 4, 0, True), (8, 512, 4, 0, False), (8, 512, 4, 4, False)]
# Variants whose GPU kernels the profiler lists (top kernels by GPU time per call).
PROFILED = ["fp8 torchao eager (baseline)", "fp8 torchao + torch.compile", "fp8 torchao + compile in a CUDA graph",
            "bf16 eager", "bf16 in a CUDA graph", "solution: fp8 GEMV + CUDA graph"]
ERROR_SEEDS = range(100, 105)


def load(path: Path, name: str):
    spec = importlib.util.spec_from_file_location(f"puzzle1_{name}", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


class Graphed:
    """A model replayed from a CUDA graph (static input, cloned output): bf16 without launch
    overhead, or torchao's compiled fp8 model the same way."""

    def __init__(self, model, in_features: int):
        self.model = model
        self.static_x = torch.randn(1, in_features, dtype=torch.bfloat16, device="cuda")
        side = torch.cuda.Stream()
        side.wait_stream(torch.cuda.current_stream())
        with torch.cuda.stream(side), torch.inference_mode():
            for _ in range(3):  # torch.compile compiles on the first calls
                model(self.static_x)
        torch.cuda.current_stream().wait_stream(side)
        self.graph = torch.cuda.CUDAGraph()
        with torch.cuda.graph(self.graph), torch.inference_mode():
            self.static_out = model(self.static_x)

    def __call__(self, x):
        self.static_x.copy_(x)
        self.graph.replay()
        return self.static_out.clone()


def build_variants(args, spec, mods, weights) -> dict:
    """name -> (forward callable, weight bytes read per call, prepare seconds)."""
    variants = {}

    def add(name, make, weight_bytes):
        t0 = time.perf_counter()
        try:
            fn = make()
            fn(spec.make_input(0, "cuda"))  # first call: JIT, compile, autotune
            torch.cuda.synchronize()
        except Exception:
            print(f"[{name}] FAILED to prepare:\n{traceback.format_exc()}", flush=True)
            return
        variants[name] = (fn, weight_bytes, time.perf_counter() - t0)
        print(f"prepared {name} in {time.perf_counter() - t0:.1f} s", flush=True)

    n_params = sum(w.numel() for w in weights["weights"])
    bf16_bytes, fp8_bytes = 2 * n_params, n_params
    base, bf16, sol = mods["baseline"], mods["bf16_eager"], mods["solution"]

    def workload(module, **kw):
        state = module.prepare(weights, "cuda", **kw)
        return lambda x: module.forward(state, x)

    add("timing floor: x.clone() only", lambda: (lambda x: x.clone()), 0)
    add("bf16 eager", lambda: workload(bf16), bf16_bytes)
    add("fp8 torchao eager (baseline)", lambda: workload(base), fp8_bytes)
    if not args.no_compile:
        compiled_model = torch.compile(base.prepare(weights, "cuda"))
        add("fp8 torchao + torch.compile", lambda: (lambda x: base.forward(compiled_model, x)), fp8_bytes)
        add("fp8 torchao + compile in a CUDA graph", lambda: Graphed(compiled_model, 4096), fp8_bytes)
    if args.reduce_overhead:
        # 20 s to compile on one H100 machine, 227 s on another.
        ro_model = torch.compile(base.prepare(weights, "cuda"), mode="reduce-overhead")
        add("fp8 torchao + compile reduce-overhead", lambda: (lambda x: base.forward(ro_model, x)), fp8_bytes)
    add("bf16 in a CUDA graph", lambda: Graphed(bf16.prepare(weights, "cuda"), 4096), bf16_bytes)
    add("solution: fp8 GEMV + CUDA graph", lambda: workload(sol), fp8_bytes)
    add("solution kernel, eager launches", lambda: workload(sol, use_graph=False), fp8_bytes)
    for bn, bk, nw, st, ev in KERNEL_CONFIGS:
        if (bn, bk, nw, st, ev) == (sol.BLOCK_N, sol.BLOCK_K, sol.NUM_WARPS, sol.STAGES, sol.EVICT_FIRST):
            continue
        add(f"  GEMV+graph BN={bn} BK={bk} w={nw} st={st}{' evict' if ev else ''}",
            lambda: workload(sol, block_n=bn, block_k=bk, num_warps=nw, stages=st, evict_first=ev), fp8_bytes)
    return variants


def rel_l2(out: torch.Tensor, ref: torch.Tensor) -> float:
    o, r = out.double(), ref.double()
    return (torch.linalg.vector_norm(o - r) / torch.linalg.vector_norm(r)).item()


def errors(spec, variants, weights) -> dict:
    """Relative L2 vs bf16 eager and vs an fp64 reference, over 5 fresh inputs.

    Each variant's outputs for all 5 inputs are kept and compared only afterwards,
    so a variant that hands back a buffer it later overwrites is caught.
    """
    xs = [spec.make_input(s, "cuda") for s in ERROR_SEEDS]
    w64 = [w.double() for w in weights["weights"]]
    refs64 = []
    for x in xs:
        r64 = x.double()
        for w in w64:
            r64 = r64 @ w.T
        refs64.append(r64)
    del w64
    oracle = [variants["bf16 eager"][0](x).clone() for x in xs]
    result = {}
    for name, (fn, _, _) in variants.items():
        vs_bf16, vs_f64, problems = [], [], set()
        try:
            ys = [fn(x) for x in xs]
            torch.cuda.synchronize()
            for y, ref, r64 in zip(ys, oracle, refs64):
                if y.dtype != torch.bfloat16 or y.shape != ref.shape:
                    problems.add(f"{y.dtype} {tuple(y.shape)}")
                if not torch.isfinite(y).all():
                    problems.add("non-finite")
                vs_bf16.append(rel_l2(y, ref))
                vs_f64.append(rel_l2(y, r64))
        except Exception as e:  # e.g. a CUDA-graph output overwritten by the next call
            problems.add(f"{type(e).__name__}: {str(e).splitlines()[0][:120]}")
            vs_bf16, vs_f64 = vs_bf16 or [float("nan")], vs_f64 or [float("nan")]
        result[name] = {"vs_bf16": vs_bf16, "vs_f64": vs_f64, "problems": sorted(problems)}
    return result


def time_all(spec, variants, rounds: int, warmup: int) -> dict:
    flush = torch.empty(256 * 2**20, dtype=torch.uint8, device="cuda")
    inputs = [spec.make_input(2000 + i, "cuda") for i in range(16)]
    for name, (fn, _, _) in variants.items():
        for i in range(warmup):
            fn(inputs[i % len(inputs)])
    torch.cuda.synchronize()
    samples = {name: [] for name in variants}
    rng = random.Random(0)
    names = list(variants)
    for r in range(rounds):
        rng.shuffle(names)
        x = inputs[r % len(inputs)]
        for name in names:
            fn = variants[name][0]
            flush.zero_()
            torch.cuda.synchronize()
            start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
            start.record()
            fn(x)
            end.record()
            torch.cuda.synchronize()
            samples[name].append(start.elapsed_time(end))
    return samples


def back_to_back_ms(spec, variants, calls: int = 50) -> dict:
    """Per-call time with calls queued back to back (no flush, no sync between): the GPU
    time when the host keeps ahead, else the host's time per call. How a steady decode loop
    sees it, and how the first numbers in the puzzle's story were taken."""
    x = spec.make_input(3000, "cuda")
    result = {}
    for name, (fn, _, _) in variants.items():
        for _ in range(5):
            fn(x)
        torch.cuda.synchronize()
        s, e = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        s.record()
        for _ in range(calls):
            fn(x)
        e.record()
        torch.cuda.synchronize()
        result[name] = s.elapsed_time(e) / calls
    return result


def kernel_tables(spec, variants, calls: int = 5) -> None:
    """The profiler's GPU kernels per call for a few variants (kernels inside CUDA graphs included)."""
    from torch.profiler import ProfilerActivity, profile

    x = spec.make_input(4000, "cuda")
    for name in PROFILED:
        if name not in variants:
            continue
        fn = variants[name][0]
        fn(x)
        torch.cuda.synchronize()
        with profile(activities=[ProfilerActivity.CPU, ProfilerActivity.CUDA]) as prof:
            for _ in range(calls):
                fn(x)
            torch.cuda.synchronize()
        kernels = [ev for ev in prof.events() if ev.device_type == torch.autograd.DeviceType.CUDA]
        by_name: dict[str, list[float]] = {}
        for ev in kernels:
            by_name.setdefault(ev.name, []).append(ev.time_range.elapsed_us())
        total_us = sum(sum(v) for v in by_name.values()) / calls
        print(f"\n[{name}] {len(kernels) / calls:.0f} GPU kernels per call, {total_us:.1f} us of kernel time per call")
        for kname, durs in sorted(by_name.items(), key=lambda kv: -sum(kv[1]))[:6]:
            print(f"  {len(durs) / calls:4.0f}x {sum(durs) / len(durs):7.1f} us  {kname[:90]}")


def kernel_resources(sol) -> None:
    """Registers, spills and 16-byte weight loads of each GEMV config, from Triton's compiled kernel."""
    n = k = 4096
    w = torch.randn(n, k, device="cuda").to(torch.float8_e4m3fn)
    scale = torch.ones(n, device="cuda")
    x = torch.randn(1, k, device="cuda", dtype=torch.bfloat16)
    y = torch.empty(1, n, device="cuda", dtype=torch.bfloat16)
    print("\nGEMV configs: registers/thread, spills, ld.global.v4 in PTX, ld.global in SASS (LDG)")
    for bn, bk, nw, st, ev in KERNEL_CONFIGS:
        ck = sol._fp8_gemv_kernel[(n // bn, 1)](x, w, scale, y, x.stride(0), w.stride(0), y.stride(0), K=k,
                                                BLOCK_N=bn, BLOCK_K=bk, STAGES=st, EVICT_FIRST=ev, num_warps=nw)
        ptx = ck.asm.get("ptx", "")
        try:
            sass = ck.asm["sass"]  # disassembled on first access (nvdisasm)
        except Exception:
            sass = ""
        print(f"  BN={bn:2} BK={bk:4} w={nw} st={st} evict={ev!s:5}: {ck.n_regs} regs, {ck.n_spills} spills, "
              f"{ptx.count('ld.global.v4')} ld.global.v4, {sass.count('LDG')} LDG, "
              f"{ptx.count('cp.async')} cp.async")


def copy_bandwidth_gbs() -> float:
    """Device-to-device copy of 1 GiB, bytes read + written: the memory ceiling."""
    a = torch.empty(2**30, dtype=torch.uint8, device="cuda")
    b = torch.empty_like(a)
    for _ in range(3):
        b.copy_(a)
    torch.cuda.synchronize()
    times = []
    for _ in range(10):
        s, e = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        s.record()
        b.copy_(a)
        e.record()
        torch.cuda.synchronize()
        times.append(s.elapsed_time(e))
    return 2 * a.numel() / (statistics.median(times) * 1e-3) / 1e9


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--rounds", type=int, default=100)
    parser.add_argument("--warmup", type=int, default=10)
    parser.add_argument("--no-compile", action="store_true")
    parser.add_argument("--reduce-overhead", action="store_true", help="also torch.compile(mode='reduce-overhead')")
    args = parser.parse_args()

    import triton

    try:
        import torchao
        ao_version = torchao.__version__
    except ImportError:
        ao_version = "missing"
    props = torch.cuda.get_device_properties(0)
    print(f"device: {props.name} (sm_{props.major}{props.minor}, {props.multi_processor_count} SMs), "
          f"torch {torch.__version__}, triton {triton.__version__}, torchao {ao_version}", flush=True)
    print(f"device-to-device copy: {copy_bandwidth_gbs():.0f} GB/s (read + write)", flush=True)

    spec = load(PUZZLE / "spec.py", "spec")
    mods = {"baseline": load(PUZZLE / "baseline.py", "baseline"),
            "bf16_eager": load(PUZZLE / "bf16_eager.py", "bf16_eager"),
            "solution": load(PUZZLE / "solution" / "workload.py", "solution")}
    weights = spec.make_weights(0, "cuda")

    variants = build_variants(args, spec, mods, weights)
    errs = errors(spec, variants, weights)
    samples = time_all(spec, variants, args.rounds, args.warmup)
    queued = back_to_back_ms(spec, variants)
    try:
        kernel_resources(mods["solution"])
    except Exception:
        print(f"kernel resources FAILED:\n{traceback.format_exc()}")
    try:
        kernel_tables(spec, variants)
    except Exception:
        print(f"kernel tables FAILED:\n{traceback.format_exc()}")

    med = {name: statistics.median(s) for name, s in samples.items()}
    base_ms = med.get("fp8 torchao eager (baseline)", float("nan"))
    bf16_ms = med.get("bf16 eager", float("nan"))
    print(f"\npuzzle1 variants: M=1, 8x Linear(4096, 4096), {args.rounds} interleaved rounds, "
          f"cold L2 (256 MB zeroed) and idle GPU before each call")
    header = (f"{'variant':44} {'median ms':>9} {'p10':>7} {'p90':>7} {'vs fp8 base':>11} {'vs bf16':>8} "
              f"{'weights GB/s':>12} {'queued ms':>9} {'rel_l2 vs bf16 (max)':>20} {'vs fp64 (max)':>13}")
    print(header)
    print("-" * len(header))
    for name in variants:
        s = sorted(samples[name])
        p10, p90 = s[len(s) // 10], s[(9 * len(s)) // 10]
        e = errs[name]
        gbs = variants[name][1] / (med[name] * 1e-3) / 1e9
        flag = f"  PROBLEM: {', '.join(e['problems'])}" if e["problems"] else ""
        print(f"{name:44} {med[name]:9.4f} {p10:7.4f} {p90:7.4f} {base_ms / med[name]:10.2f}x {bf16_ms / med[name]:7.2f}x "
              f"{gbs:12.0f} {queued[name]:9.4f} {statistics.median(e['vs_bf16']):12.4f} ({max(e['vs_bf16']):.4f}) "
              f"{max(e['vs_f64']):13.4f}{flag}")
    print("\nrel_l2 vs bf16 eager per input (5 fresh inputs):")
    for name in variants:
        print(f"  {name:44} " + " ".join(f"{v:.4f}" for v in errs[name]["vs_bf16"]))
    print("\nprepare seconds: " + ", ".join(f"{n.strip()} {variants[n][2]:.1f}" for n in variants))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
