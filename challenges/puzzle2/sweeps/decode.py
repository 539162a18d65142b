"""Puzzle 2 groundwork at decode shapes: CUDA graphs, their memory pools and recompiles, per way of serving.

    PYTHONPATH=. python challenges/puzzle2/sweeps/decode.py [--rounds 30] [--only NAME ...]

The model: LAYERS blocks of x + W2·gelu(W1·layer_norm(x)) in bf16, one token per request, so a
step's input is (bs, HIDDEN). A server sees every batch size in 1..MAX_BS: the trace serves each
size in a shuffled order, twice. Each variant runs in its own subprocess (allocator, graph pools
and dynamo state do not leak between variants) and prints one JSON line: reserved memory and
bytes in private graph pools after the trace, graphs captured, dynamo counters, the trace's
wall time (captures and compiles included), latency per batch size with the grader's method
(cold L2, idle GPU, CUDA events), and the error against an fp32 eager reference.
"""

from __future__ import annotations

import argparse
import json
import random
import statistics
import subprocess
import sys
import time

LAYERS, HIDDEN, FFN, MAX_BS = 8, 1024, 4096, 64
BUCKETS = [1, 2, 4, 8, 16, 24, 32, 48, 64]
TIMED_SIZES = [1, 3, 8, 17, 40, 64]


def weights(dtype=None):
    import torch
    g = torch.Generator().manual_seed(0)
    dtype = dtype or torch.bfloat16
    layers = []
    for _ in range(LAYERS):
        w1 = torch.randn(FFN, HIDDEN, generator=g) * HIDDEN**-0.5
        w2 = torch.randn(HIDDEN, FFN, generator=g) * FFN**-0.5
        layers.append((w1.to(dtype).cuda(), w2.to(dtype).cuda()))
    return layers


def model(x, layers):
    import torch.nn.functional as F
    for w1, w2 in layers:
        h = F.layer_norm(x, x.shape[-1:])
        x = x + F.linear(F.gelu(F.linear(h, w1)), w2)
    return x


def bucket_of(bs):
    return next(b for b in BUCKETS if b >= bs)


def padded(f):
    """Serve bs rows by padding the batch up to its bucket: few shapes, so few graphs."""
    import torch

    def run(x):
        bs = x.shape[0]
        b = bucket_of(bs)
        xp = x if b == bs else torch.cat([x, x.new_zeros(b - bs, x.shape[1])])
        return f(xp)[:bs]
    return run


class ManualGraphs:
    """One torch.cuda.CUDAGraph per shape, captured on first sight (or up front, largest first)."""

    def __init__(self, layers, shared_pool: bool, buckets: list[int] | None):
        import torch
        self.torch, self.layers, self.buckets = torch, layers, buckets
        self.pool = torch.cuda.graph_pool_handle() if shared_pool else None
        self.static_in = torch.zeros(MAX_BS, HIDDEN, dtype=torch.bfloat16, device="cuda")
        self.graphs = {}
        side = torch.cuda.Stream()
        side.wait_stream(torch.cuda.current_stream())
        with torch.cuda.stream(side):  # warm-up outside capture: cuBLAS handles and workspaces
            for _ in range(3):
                model(self.static_in, layers)
        torch.cuda.current_stream().wait_stream(side)
        for b in sorted(buckets or [], reverse=True):  # largest first: smaller graphs reuse its blocks
            self._capture(b)

    def _capture(self, b):
        torch = self.torch
        g = torch.cuda.CUDAGraph()
        with torch.cuda.graph(g, pool=self.pool):
            out = model(self.static_in[:b], self.layers)
        self.graphs[b] = (g, out)

    def __call__(self, x):
        bs = x.shape[0]
        b = bucket_of(bs) if self.buckets else bs
        if b not in self.graphs:
            self._capture(b)
        self.static_in[:bs].copy_(x)
        if b > bs:
            self.static_in[bs:b].zero_()
        g, out = self.graphs[b]
        g.replay()
        return out[:bs].clone()


def build(name, layers):
    import torch
    f = lambda x: model(x, layers)  # noqa: E731
    variants = {
        "eager": lambda: f,
        "ro_auto": lambda: torch.compile(f, mode="reduce-overhead"),
        "ro_static": lambda: torch.compile(f, mode="reduce-overhead", dynamic=False),
        "ro_dynamic": lambda: torch.compile(f, mode="reduce-overhead", dynamic=True),
        "ro_static_padded": lambda: padded(torch.compile(f, mode="reduce-overhead", dynamic=False)),
        "ro_auto_padded": lambda: padded(torch.compile(f, mode="reduce-overhead")),
        "compile_default": lambda: torch.compile(f),
        "manual_own_pools": lambda: ManualGraphs(layers, shared_pool=False, buckets=None),
        "manual_shared_pool": lambda: ManualGraphs(layers, shared_pool=True, buckets=None),
        "manual_own_pools_buckets": lambda: ManualGraphs(layers, shared_pool=False, buckets=BUCKETS),
        "manual_shared_pool_buckets": lambda: ManualGraphs(layers, shared_pool=True, buckets=BUCKETS),
    }
    if name not in variants:
        raise SystemExit(f"unknown variant {name}")
    return variants[name]()


def graph_pool_mb():
    """Bytes in segments of private pools (CUDA graphs) vs the default pool, from the allocator."""
    import torch
    private = default = 0
    for seg in torch.cuda.memory_snapshot():
        if tuple(seg.get("segment_pool_id", (0, 0))) != (0, 0):
            private += seg["total_size"]
        else:
            default += seg["total_size"]
    return private / 2**20, default / 2**20


def child(name, rounds):
    import torch
    from torch._dynamo.utils import counters
    from tutor.harness.device import Device

    captures = []
    begin = torch.cuda.CUDAGraph.capture_begin

    def counting_capture_begin(self, *a, **k):
        captures.append(1)
        return begin(self, *a, **k)
    torch.cuda.CUDAGraph.capture_begin = counting_capture_begin

    dev = Device("cuda")
    layers = weights()
    weights_mb = torch.cuda.memory_allocated() / 2**20 - dev._flush.numel() / 2**20
    inputs = {bs: torch.randn(bs, HIDDEN, dtype=torch.bfloat16, device="cuda") for bs in range(1, MAX_BS + 1)}
    torch.cuda.synchronize()
    reserved_before = torch.cuda.memory_reserved() / 2**20
    torch.cuda.reset_peak_memory_stats()
    t0 = time.perf_counter()
    fn = build(name, layers)
    order = list(range(1, MAX_BS + 1))
    random.Random(0).shuffle(order)
    first_call_ms = {}
    for rep in range(2):
        for bs in order:
            s = time.perf_counter()
            y = fn(inputs[bs])
            torch.cuda.synchronize()
            if rep == 0:
                first_call_ms[bs] = (time.perf_counter() - s) * 1e3
            del y
    trace_s = time.perf_counter() - t0
    private_mb, default_mb = graph_pool_mb()
    mem = {"weights_mb": round(weights_mb, 1), "reserved_before_mb": round(reserved_before, 1),
           "reserved_after_mb": round(torch.cuda.memory_reserved() / 2**20, 1),
           "max_reserved_mb": round(torch.cuda.max_memory_reserved() / 2**20, 1),
           "max_allocated_mb": round(torch.cuda.max_memory_allocated() / 2**20, 1),
           "graph_pool_mb": round(private_mb, 1), "default_pool_mb": round(default_mb, 1)}
    ref_layers = weights(torch.float32)
    err = {}
    for bs in (1, 3, 17, 64):
        r = model(inputs[bs].float(), ref_layers)
        err[bs] = ((fn(inputs[bs]).float() - r).norm() / r.norm()).item()
    del ref_layers, r
    flat = {f"{group}.{k}": v for group, c in counters.items() for k, v in c.items() if v}
    lat = {}
    for bs in TIMED_SIZES:
        samples = [dev.time_call_ms(lambda: fn(inputs[bs]))[0] for _ in range(rounds)]
        lat[bs] = round(statistics.median(samples), 4)
    slow_first = sorted(first_call_ms.items(), key=lambda kv: -kv[1])[:5]
    print(json.dumps({"variant": name, "trace_s": round(trace_s, 2), "captures": len(captures), "memory": mem,
                      "latency_ms": lat, "rel_err": err, "counters": flat,
                      "first_call_ms_median": round(statistics.median(first_call_ms.values()), 2),
                      "slowest_first_calls_ms": [(b, round(ms, 1)) for b, ms in slow_first]}), flush=True)


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--rounds", type=int, default=30)
    p.add_argument("--only", nargs="*")
    p.add_argument("--child")
    a = p.parse_args()
    if a.child:
        child(a.child, a.rounds)
        return
    names = a.only or ["eager", "ro_auto", "ro_static", "ro_dynamic", "ro_static_padded", "ro_auto_padded",
                       "compile_default", "manual_own_pools", "manual_shared_pool", "manual_own_pools_buckets",
                       "manual_shared_pool_buckets"]
    for n in names:
        try:
            r = subprocess.run([sys.executable, __file__, "--child", n, "--rounds", str(a.rounds)],
                               capture_output=True, text=True, timeout=300)
            out = [line for line in r.stdout.splitlines() if line.startswith("{")]
            print(out[-1] if out else json.dumps({"variant": n, "rc": r.returncode, "stderr": r.stderr[-1500:]}),
                  flush=True)
        except subprocess.TimeoutExpired:
            print(json.dumps({"variant": n, "timeout_s": 300}), flush=True)


if __name__ == "__main__":
    main()
