"""How the CUDA caching allocator fragments under a prefill loop, and what each way out costs: the measurement that
is to design issue 38's memory_fragmentation puzzle (its scene, its memory budget, its tiers).

    python benchmarks/allocator_fragmentation.py [--calls 10] [--prompts 16] [--hidden 4096] [--ffn 14336]
                                                 [--json OUT]

Each configuration runs in a process of its own (the allocator's settings and statistics are per process). A call
prefills --prompts prompts of 128..4096 tokens, one after another, through two transformer layers (one set of
weights): each prompt's KV cache is allocated at its exact length and kept to the end of the call, where one
decode step attends over every cache; its activations are freed as the prompt ends. So long-lived blocks of every
size sit between short-lived ones of every size. Printed per configuration: ms a call (median), peak allocated
and peak reserved MB, and a call's cudaMalloc and cudaFree calls and flush-and-retries (torch.cuda.memory_stats).

Configurations:
- default: the caching allocator as it comes;
- empty_cache: torch.cuda.empty_cache() after every prompt (what a team does to stay under a memory budget);
- expandable: expandable segments, switched on after the weights were allocated (as a workload's prepare() would
  find a harness's process);
- pool: the caches in one buffer sized for the call's longest prompts, each prompt's input in one buffer (its
  other activations still allocated as they come): the long-lived blocks out of the allocator's way;
- capped: the default allocator under a per-process cap 15% above the default's peak allocated (the allocator
  frees its cache and retries when a cudaMalloc would pass it).
`--device cpu` runs every configuration's arithmetic without memory figures (a check of the script, not a number).
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import time

CONFIGS = ("default", "empty_cache", "expandable", "pool", "capped")
HEADS, KV_HEADS, LAYERS = 32, 8, 2  # a Llama-3-8B layer's heads: K and V 1024 wide at 4096
SHORTEST, LONGEST = 128, 4096


def kv_width(hidden: int) -> int:
    return KV_HEADS * (hidden // HEADS)


def weights(hidden: int, ffn: int, device: str) -> dict:
    import torch

    g = torch.Generator(device=device).manual_seed(0)
    scale = hidden ** -0.5
    return {name: (torch.randn(*shape, generator=g, device=device) * scale).to(torch.bfloat16)
            for name, shape in {"qkv": (hidden, hidden + 2 * kv_width(hidden)), "o": (hidden, hidden),
                                "up": (hidden, 2 * ffn), "down": (ffn, hidden)}.items()}


def prompt_lengths(seed: int, prompts: int) -> list[int]:
    import torch

    g = torch.Generator().manual_seed(seed)
    return torch.randint(SHORTEST, LONGEST + 1, (prompts,), generator=g).tolist()


def layer(w: dict, x, cache, hidden: int):
    """One layer over a prompt's tokens, its K and V written into `cache` [2, tokens, kv_width]."""
    import torch
    import torch.nn.functional as F

    tokens, head = x.shape[0], hidden // HEADS
    qkv = x @ w["qkv"]
    q, k, v = qkv.split([hidden, kv_width(hidden), kv_width(hidden)], dim=-1)
    cache[0].copy_(k)
    cache[1].copy_(v)
    q = q.view(tokens, HEADS, head).transpose(0, 1)
    k, v = (t.view(tokens, KV_HEADS, head).transpose(0, 1) for t in (k, v))
    attn = F.scaled_dot_product_attention(q, k, v, is_causal=True, enable_gqa=True)
    x = x + attn.transpose(0, 1).reshape(tokens, hidden) @ w["o"]
    gate, up = (x @ w["up"]).chunk(2, dim=-1)
    return x + (F.silu(gate) * up) @ w["down"]


def decode(w: dict, caches: list, hidden: int):
    """One new token per prompt, attending over its whole cache: every kept cache is read."""
    import torch
    import torch.nn.functional as F

    head, out = hidden // HEADS, []
    for cache in caches:
        q = torch.ones(HEADS, 1, head, device=cache.device, dtype=cache.dtype)
        k, v = (cache[i].view(-1, KV_HEADS, head).transpose(0, 1) for i in (0, 1))
        out.append(F.scaled_dot_product_attention(q, k, v, enable_gqa=True).sum())
    return torch.stack(out)


def call(w: dict, lengths: list[int], hidden: int, config: str, pool: dict | None):
    import torch

    device = w["qkv"].device
    caches, used = [], 0
    for i, tokens in enumerate(lengths):
        g = torch.Generator(device=device).manual_seed(i)
        if pool is None:
            x = torch.randn(tokens, hidden, generator=g, device=device, dtype=torch.bfloat16)
            cache = torch.empty(LAYERS, 2, tokens, kv_width(hidden), device=device, dtype=torch.bfloat16)
        else:
            x = pool["x"][:tokens]
            x.normal_(generator=g)
            cache = pool["caches"][:, :, used:used + tokens]
            used += tokens
        for n in range(LAYERS):
            x = layer(w, x, cache[n], hidden)
        caches.extend(cache[n] for n in range(LAYERS))
        del x
        if config == "empty_cache":
            torch.cuda.empty_cache()
    return decode(w, caches, hidden)


def measure(config: str, calls: int, prompts: int, hidden: int, ffn: int, cap_mb: float, device: str) -> dict:
    import torch

    w = weights(hidden, ffn, device)
    cuda = device == "cuda"
    if cuda and config == "expandable":
        torch.cuda.memory._set_allocator_settings("expandable_segments:True")
    if cuda and config == "capped":
        torch.cuda.set_per_process_memory_fraction(cap_mb * 2**20 / torch.cuda.get_device_properties(0).total_memory)
    pool = None
    if config == "pool":
        pool = {"x": torch.empty(LONGEST, hidden, device=device, dtype=torch.bfloat16),
                "caches": torch.empty(LAYERS, 2, prompts * LONGEST, kv_width(hidden), device=device,
                                      dtype=torch.bfloat16)}
    inputs = [prompt_lengths(seed, prompts) for seed in range(calls + 2)]
    for lengths in inputs[:2]:  # warm: kernels chosen, the allocator's cache as a running server's would be
        call(w, lengths, hidden, config, pool)
    if cuda:
        torch.cuda.synchronize()
        torch.cuda.reset_peak_memory_stats()
        before = torch.cuda.memory_stats()
    times = []
    for lengths in inputs[2:]:
        began = time.perf_counter()
        out = call(w, lengths, hidden, config, pool)
        if cuda:
            torch.cuda.synchronize()
        times.append((time.perf_counter() - began) * 1e3)
    figures = {"config": config, "ms_a_call": statistics.median(times), "ms_spread": [min(times), max(times)],
               "checksum": float(out.float().sum())}  # the same work in every configuration: about the same sum
    if cuda:
        after = torch.cuda.memory_stats()
        figures.update({
            "peak_allocated_mb": after["allocated_bytes.all.peak"] / 2**20,
            "peak_reserved_mb": after["reserved_bytes.all.peak"] / 2**20,
            **{f"{key}_a_call": (after.get(key, 0) - before.get(key, 0)) / calls
               for key in ("num_device_alloc", "num_device_free", "num_alloc_retries")}})
    return figures


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--calls", type=int, default=10)
    parser.add_argument("--prompts", type=int, default=16)
    parser.add_argument("--hidden", type=int, default=4096)
    parser.add_argument("--ffn", type=int, default=14336)
    parser.add_argument("--device", default="cuda")
    parser.add_argument("--json")
    parser.add_argument("--config", help=argparse.SUPPRESS)  # one configuration, in a process of its own
    parser.add_argument("--cap-mb", type=float, default=0.0, help=argparse.SUPPRESS)
    args = parser.parse_args()
    sizes = ["--calls", str(args.calls), "--prompts", str(args.prompts), "--hidden", str(args.hidden),
             "--ffn", str(args.ffn), "--device", args.device]
    if args.config:
        print(json.dumps(measure(args.config, args.calls, args.prompts, args.hidden, args.ffn, args.cap_mb,
                                 args.device)))
        return
    results, cap_mb = [], 0.0
    for config in CONFIGS:
        if config == "capped" and args.device == "cuda" and not cap_mb:
            print(f"{config:12s} skipped: the default configuration gave no peak to cap 15% above", flush=True)
            continue
        line = subprocess.run([sys.executable, __file__, *sizes, "--config", config, "--cap-mb", str(cap_mb)],
                              capture_output=True, text=True)
        if line.returncode:
            print(f"{config:12s} failed: {line.stderr.strip().splitlines()[-1:]}", flush=True)
            continue
        figures = json.loads(line.stdout.strip().splitlines()[-1])
        results.append(figures)
        if config == "default":
            cap_mb = 1.15 * figures.get("peak_allocated_mb", 0.0)
        memory = (f"peak allocated {figures['peak_allocated_mb']:8.0f} MB, reserved {figures['peak_reserved_mb']:8.0f} "
                  f"MB; a call: cudaMalloc {figures['num_device_alloc_a_call']:6.1f}, cudaFree "
                  f"{figures['num_device_free_a_call']:6.1f}, retries {figures['num_alloc_retries_a_call']:5.1f}"
                  if "peak_allocated_mb" in figures else "")
        print(f"{config:12s} {figures['ms_a_call']:8.2f} ms a call  {memory}  (sum {figures['checksum']:.4g})",
              flush=True)
    if args.json:
        with open(args.json, "w") as f:
            json.dump({"sizes": sizes, "results": results}, f, indent=1)


if __name__ == "__main__":
    main()
