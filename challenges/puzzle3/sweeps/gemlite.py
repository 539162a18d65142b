"""Puzzle 3 groundwork: what GemLite's autotuner picks for A16W8 fp8 layers, per batch size, and how good it is.

    PYTHONPATH=. python challenges/puzzle3/sweeps/gemlite.py [--sweep-budget 30]

Needs a CUDA GPU and gemlite (0.6.0.post2 measured). Prints JSON lines:
- "default": per (M, N, K), the matmul type GemLite dispatches to, the config-cache key it looks
  up (M rounded up to its bucket), the config found, its latency and bf16 F.linear's, timed
  with the grader's method (cold L2, idle GPU, CUDA events; median of --rounds), both end to end
  and captured in a CUDA graph (GPU time alone);
- "sweep": for a few M, every distinct config the shipped cache holds for that matmul type and
  shape, injected as the cache entry and timed in a CUDA graph: how far the bucketed default is
  from the best;
- "forced": GEMM vs GEMM_SPLITK on both sides of the M=64 switch;
- "autotune": with the shipped cache cleared, what the triton autotuner picks and how long it takes.
"""

from __future__ import annotations

import argparse
import copy
import json
import statistics
import time

SHAPES = [(4096, 4096), (14336, 4096)]  # (N = out_features, K = in_features)
MS = [1, 2, 3, 4, 8, 16, 17, 24, 32, 33, 48, 64, 65, 96, 128, 256]
SWEEP_MS = [(3, 4096, 4096), (17, 4096, 4096), (33, 4096, 4096), (65, 4096, 4096), (17, 14336, 4096)]


def layer(n, k):
    import torch
    from gemlite.helper import A16W8_FP8
    g = torch.Generator().manual_seed(n + k)
    w = (torch.randn(n, k, generator=g) * k**-0.5).to(torch.bfloat16).cuda()
    return w, A16W8_FP8(device="cuda", dtype=torch.bfloat16).from_weights(w.clone())


def signature(m, n, k):
    from gemlite.triton_kernels.utils import get_closest_m
    # A16W8 fp8: group_size = K, one weight per byte, type_id = 4*100 + 8 (bf16 shares fp16's tuning)
    return str((get_closest_m(m), n, k, k, 1, 408))


def autotuners():
    from gemlite import core
    return [kern for t in core.GEMLITE_TRITON_MAPPING.values() for kern in t.kernel]


def forget_choices():
    """Drop the triton autotuners' per-key choices so the next call consults the config cache again."""
    for kern in autotuners():
        kern.cache.clear()


def median_ms(dev, fn, rounds):
    """End to end, as a caller sees it: host dispatch (custom op, autotuner lookup, launch) included."""
    return round(statistics.median(dev.time_call_ms(fn)[0] for _ in range(rounds)), 4)


def graph_ms(dev, fn, rounds):
    """The GPU's time alone: the call captured in a CUDA graph, so host overhead drops out."""
    import torch
    fn()
    side = torch.cuda.Stream()
    side.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(side):
        fn()
    torch.cuda.current_stream().wait_stream(side)
    g = torch.cuda.CUDAGraph()
    with torch.cuda.graph(g):
        fn()
    return round(statistics.median(dev.time_call_ms(g.replay)[0] for _ in range(rounds)), 4)


def default_table(dev, rounds):
    import torch
    import torch.nn.functional as F
    from gemlite import core
    for n, k in SHAPES:
        w, gl = layer(n, k)
        for m in MS:
            x = torch.randn(m, k, dtype=torch.bfloat16, device="cuda")
            kind = core.get_matmul_type(m, 8)
            sig = signature(m, n, k)
            cfg = core.GEMLITE_TRITON_CONFIG_CACHE.get(kind, {}).get(sig)
            t0 = time.perf_counter()
            y = gl(x)
            torch.cuda.synchronize()
            first_s = time.perf_counter() - t0
            ref = F.linear(x.float(), w.float())
            err = ((y.float() - ref).norm() / ref.norm()).item()
            print(json.dumps({"kind": "default", "M": m, "N": n, "K": k, "type": kind, "key": sig, "cached": cfg is not None,
                              "config": cfg, "first_call_s": round(first_s, 3), "rel_err": round(err, 5),
                              "gemlite_ms": median_ms(dev, lambda: gl(x), rounds),
                              "bf16_ms": median_ms(dev, lambda: F.linear(x, w), rounds),
                              "gemlite_graph_ms": graph_ms(dev, lambda: gl(x), rounds),
                              "bf16_graph_ms": graph_ms(dev, lambda: F.linear(x, w), rounds)}), flush=True)


def distinct_configs(kind, n, k):
    from gemlite import core
    seen, out = set(), []
    for key, cfg in core.GEMLITE_TRITON_CONFIG_CACHE.get(kind, {}).items():
        if f", {n}, {k}, {k}, 1, 408)" not in key and f", {k}, {k}, 1, 408)" not in key:
            continue
        ident = json.dumps(cfg, sort_keys=True)
        if ident not in seen:
            seen.add(ident)
            out.append(cfg)
    return out


def sweep(dev, rounds, budget):
    import torch
    from gemlite import core
    shipped = copy.deepcopy(core.GEMLITE_TRITON_CONFIG_CACHE)
    for m, n, k in SWEEP_MS:
        w, gl = layer(n, k)
        x = torch.randn(m, k, dtype=torch.bfloat16, device="cuda")
        kind = core.get_matmul_type(m, 8)
        sig = signature(m, n, k)
        default = shipped.get(kind, {}).get(sig)
        results = []
        for cfg in distinct_configs(kind, n, k)[:budget]:
            core.GEMLITE_TRITON_CONFIG_CACHE[kind][sig] = cfg
            forget_choices()
            try:
                gl(x)
                torch.cuda.synchronize()
                results.append((graph_ms(dev, lambda: gl(x), rounds), cfg))
            except Exception as e:  # a config the shape cannot use: note it, go on
                results.append((None, {"error": f"{type(e).__name__}: {str(e)[:120]}", **cfg}))
        core.GEMLITE_TRITON_CONFIG_CACHE = copy.deepcopy(shipped)
        forget_choices()
        default_ms = graph_ms(dev, lambda: gl(x), rounds)
        ok = sorted((r for r in results if r[0] is not None), key=lambda r: r[0])
        print(json.dumps({"kind": "sweep", "M": m, "N": n, "K": k, "type": kind, "key": sig, "default_config": default,
                          "default_ms": default_ms, "candidates": len(results),
                          "best": ok[:3], "worst": ok[-2:], "failed": [r[1] for r in results if r[0] is None][:3]}),
              flush=True)


def forced(dev, rounds):
    import torch
    for n, k in SHAPES[:1]:
        _, gl = layer(n, k)
        for m in (32, 48, 63, 64, 65, 96, 128):
            x = torch.randn(m, k, dtype=torch.bfloat16, device="cuda")
            row = {"kind": "forced", "M": m, "N": n, "K": k}
            for t in ("GEMM_SPLITK", "GEMM"):
                try:
                    gl.forward_manual(x, matmul_type=t)
                    row[t] = graph_ms(dev, lambda: gl.forward_manual(x, matmul_type=t), rounds)
                except Exception as e:
                    row[t] = f"{type(e).__name__}: {str(e)[:120]}"
            print(json.dumps(row), flush=True)


def autotune_fresh(dev, rounds):
    import torch
    from gemlite import core
    core.GemLiteLinear.reset_config()
    forget_choices()
    _, gl = layer(4096, 4096)
    for m in (1, 16, 64):
        x = torch.randn(m, 4096, dtype=torch.bfloat16, device="cuda")
        t0 = time.perf_counter()
        gl(x)
        torch.cuda.synchronize()
        tune_s = time.perf_counter() - t0
        kind = core.get_matmul_type(m, 8)
        chosen = {str(key): c.all_kwargs() for kern in autotuners() for key, c in kern.cache.items() if key[0] == m}
        print(json.dumps({"kind": "autotune", "M": m, "type": kind, "tune_s": round(tune_s, 2), "chosen": chosen,
                          "graph_ms": graph_ms(dev, lambda: gl(x), rounds)}), flush=True)


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--rounds", type=int, default=30)
    p.add_argument("--sweep-budget", type=int, default=30)
    p.add_argument("--parts", nargs="*", default=["default", "forced", "sweep", "autotune"])
    a = p.parse_args()
    import gemlite
    from tutor.harness.device import Device
    dev = Device("cuda")
    print(json.dumps({"gemlite": gemlite.__version__}), flush=True)
    if "default" in a.parts:
        default_table(dev, a.rounds)
    if "forced" in a.parts:
        forced(dev, a.rounds)
    if "sweep" in a.parts:
        sweep(dev, 15, a.sweep_budget)
    if "autotune" in a.parts:
        autotune_fresh(dev, a.rounds)


if __name__ == "__main__":
    main()
