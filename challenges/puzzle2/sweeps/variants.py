"""Puzzle 2 on one CUDA GPU: memory, recompiles, CUDA graphs and latency of each way to serve varying batch sizes.

    PYTHONPATH=. python challenges/puzzle2/sweeps/variants.py [--rounds 20] [--only NAME ...]

The model: Linear(2048->8192) -> GELU -> Linear(8192->2048) in fp16 on (bs, 512, 2048), bs in
SIZES. Each variant runs in its own subprocess (memory pools and dynamo state do not leak
between variants): prepare, serve every size twice (warm-up: compiles and graph captures),
then record reserved/allocated memory and dynamo/inductor counters, then time each size with
the grader's method (cold L2, idle GPU, CUDA events). Prints one JSON line per variant.
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import time

SIZES = [1, 2, 3, 4, 5, 6, 7, 8, 16, 32, 64, 128]
SEQ, HIDDEN, FFN = 512, 2048, 8192
BUCKETS = [1, 2, 4, 8, 16, 32, 64, 128]


def weights():
    import torch
    g = torch.Generator().manual_seed(0)
    w1 = (torch.randn(FFN, HIDDEN, generator=g) * HIDDEN**-0.5).half().cuda()
    w2 = (torch.randn(HIDDEN, FFN, generator=g) * FFN**-0.5).half().cuda()
    return w1, w2


def mlp(x, w1, w2):
    import torch.nn.functional as F
    return F.linear(F.gelu(F.linear(x, w1)), w2)


def bucket_of(bs):
    return next(b for b in BUCKETS if b >= bs)


def padded(f, w1, w2):
    """Serve bs rows by padding the batch up to its bucket: few shapes, so few graphs."""
    import torch

    def run(x):
        bs = x.shape[0]
        b = bucket_of(bs)
        xp = x if b == bs else torch.cat([x, x.new_zeros(b - bs, *x.shape[1:])])
        return f(xp, w1, w2)[:bs].clone()
    return run


def build(name):
    import torch
    w1, w2 = weights()
    if name == "eager":
        return lambda x: mlp(x, w1, w2)
    if name == "compile_reduce_overhead":  # the puzzle's baseline
        f = torch.compile(mlp, mode="reduce-overhead")
        return lambda x: f(x, w1, w2)
    if name == "compile_reduce_overhead_static":  # one graph per shape, as dynamic=False asks
        f = torch.compile(mlp, mode="reduce-overhead", dynamic=False)
        return lambda x: f(x, w1, w2)
    if name == "static_padded_buckets":
        return padded(torch.compile(mlp, mode="reduce-overhead", dynamic=False), w1, w2)
    if name == "compile_default":
        f = torch.compile(mlp)
        return lambda x: f(x, w1, w2)
    if name == "compile_dynamic_no_graphs":
        f = torch.compile(mlp, dynamic=True)
        return lambda x: f(x, w1, w2)
    if name == "reduce_overhead_padded_buckets":
        return padded(torch.compile(mlp, mode="reduce-overhead"), w1, w2)
    if name == "reduce_overhead_dynamic_marked":
        f = torch.compile(mlp, mode="reduce-overhead", dynamic=True)
        return lambda x: f(x, w1, w2)
    if name in ("manual_graphs_shared_pool", "manual_graphs_own_pools"):
        shared = name == "manual_graphs_shared_pool"
        pool = torch.cuda.graph_pool_handle() if shared else None
        static_in = torch.zeros(BUCKETS[-1], SEQ, HIDDEN, dtype=torch.half, device="cuda")
        graphs = {}
        side = torch.cuda.Stream()
        side.wait_stream(torch.cuda.current_stream())
        with torch.cuda.stream(side):
            mlp(static_in, w1, w2)
        torch.cuda.current_stream().wait_stream(side)
        for b in sorted(BUCKETS, reverse=True):  # largest first: smaller graphs fit in its freed blocks
            g = torch.cuda.CUDAGraph()
            with torch.cuda.graph(g, pool=pool if shared else None):
                out = mlp(static_in[:b], w1, w2)
            graphs[b] = (g, out)

        def run(x):
            bs = x.shape[0]
            b = bucket_of(bs)
            static_in[:bs].copy_(x)
            if b > bs:
                static_in[bs:b].zero_()
            g, out = graphs[b]
            g.replay()
            return out[:bs].clone()
        return run
    raise SystemExit(f"unknown variant {name}")


def child(name, rounds):
    import torch
    from torch._dynamo.utils import counters
    from tutor.harness.device import Device

    dev = Device("cuda")
    base_alloc = torch.cuda.memory_allocated()
    t0 = time.monotonic()
    fn = build(name)
    inputs = {bs: torch.randn(bs, SEQ, HIDDEN, generator=None, dtype=torch.half, device="cuda") for bs in SIZES}
    input_bytes = sum(t.numel() * 2 for t in inputs.values())
    torch.cuda.reset_peak_memory_stats()
    reserved_before = torch.cuda.memory_reserved()
    growth = {}
    for _ in range(2):
        for bs in SIZES:
            y = fn(inputs[bs])
            del y
            torch.cuda.synchronize()
            growth.setdefault(bs, round(torch.cuda.memory_reserved() / 2**20))
    torch.cuda.synchronize()
    warm_s = time.monotonic() - t0
    w = weights()
    err = {}
    for bs in (1, 3, 8, 128):
        r = mlp(inputs[bs], *w).float()
        err[bs] = ((fn(inputs[bs]).float() - r).norm() / r.norm()).item()
    del w, r
    torch.cuda.synchronize()
    mem = {
        "reserved_mb": torch.cuda.memory_reserved() / 2**20,
        "max_reserved_mb": torch.cuda.max_memory_reserved() / 2**20,
        "max_allocated_mb": torch.cuda.max_memory_allocated() / 2**20,
        "allocated_mb": torch.cuda.memory_allocated() / 2**20,
        "reserved_before_mb": reserved_before / 2**20,
        "inputs_mb": input_bytes / 2**20,
        "flush_mb": dev._flush.numel() / 2**20,
        "reserved_after_first_call_of_size_mb": growth,
    }
    flat = {f"{group}.{k}": v for group, c in counters.items() for k, v in c.items() if v}
    lat = {}
    for bs in SIZES:
        samples = [dev.time_call_ms(lambda: fn(inputs[bs]))[0] for _ in range(rounds)]
        lat[bs] = statistics.median(samples)
    print(json.dumps({"variant": name, "warm_s": round(warm_s, 1), "rel_err": err, "memory": mem,
                      "latency_ms": lat, "counters": flat}), flush=True)


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--rounds", type=int, default=20)
    p.add_argument("--only", nargs="*")
    p.add_argument("--child")
    a = p.parse_args()
    if a.child:
        child(a.child, a.rounds)
        return
    names = a.only or ["eager", "compile_reduce_overhead", "compile_reduce_overhead_static", "static_padded_buckets",
                       "compile_default", "compile_dynamic_no_graphs",
                       "reduce_overhead_padded_buckets", "reduce_overhead_dynamic_marked",
                       "manual_graphs_shared_pool", "manual_graphs_own_pools"]
    for n in names:
        r = subprocess.run([sys.executable, __file__, "--child", n, "--rounds", str(a.rounds)], capture_output=True, text=True, timeout=400)
        out = [l for l in r.stdout.splitlines() if l.startswith("{")]
        print(out[-1] if out else json.dumps({"variant": n, "rc": r.returncode, "stderr": r.stderr[-1500:]}), flush=True)


if __name__ == "__main__":
    main()
