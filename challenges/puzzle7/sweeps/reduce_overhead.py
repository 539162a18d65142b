"""Puzzle 7 on one CUDA GPU: does a head compiled with torch.compile(mode="reduce-overhead") keep its outputs
while a side stream copies them? A style a learner may write; not one of the puzzle's alternatives.

    PYTHONPATH=. python challenges/puzzle7/sweeps/reduce_overhead.py [--calls 6]

cudagraph trees replay the head from a graph whose outputs live in its pool; the next replay may write the same
memory while a copy queued on the side stream has yet to read it. Printed for each of two forms (the outputs copied
as returned, and cloned first): each call's relative L2 error against the baseline on a fresh input, and the median
wall time a call beside the reference's.
"""

from __future__ import annotations

import argparse
from pathlib import Path

import torch
import torch.nn.functional as F

from tutor.harness.loading import load_module

FOLDER = Path(__file__).parents[1]
timed_ms = load_module(FOLDER / "sweeps" / "scene_size.py", "p7_scene_size", ()).timed_ms  # its median wall ms


def head(x: torch.Tensor, w1: torch.Tensor, w2: torch.Tensor) -> torch.Tensor:
    return F.normalize(F.gelu(x @ w1) @ w2, dim=-1)


def overlapped(compiled, clone: bool):
    """The reference's overlap around a reduce-overhead head; `clone` copies each output out of the graph's pool.
    (The reference's loop again on purpose: the head and the clone are what this sweep varies.)"""
    copies = torch.cuda.Stream()

    def forward(w: dict, x: torch.Tensor) -> torch.Tensor:
        out = torch.empty(x.shape[0], x.shape[1], w["w2"].shape[1], pin_memory=True)
        for i in range(x.shape[0]):
            embedded = compiled(x[i], w["w1"], w["w2"])
            if clone:
                embedded = embedded.clone()
            made = torch.cuda.Event()
            made.record()
            with torch.cuda.stream(copies):
                copies.wait_event(made)
                out[i].copy_(embedded, non_blocking=True)
            embedded.record_stream(copies)
        copies.synchronize()
        return out
    return forward


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--calls", type=int, default=6)
    calls = parser.parse_args().calls
    spec, baseline = load_module(FOLDER / "spec.py", "p7_spec", ()), load_module(FOLDER / "baseline.py", "p7_base", ())
    reference = load_module(FOLDER / "solution" / "workload.py", "p7_reference", ())
    w = spec.make_weights(1, "cuda")
    state = reference.prepare(w, "cuda")
    x = spec.make_input(0, "cuda")
    print(f"reference: {timed_ms(lambda: reference.forward(state, x), 9):.2f} ms a call", flush=True)
    for clone in (False, True):
        forward = overlapped(torch.compile(head, mode="reduce-overhead", dynamic=False), clone)
        for _ in range(3):
            forward(w, x)  # warm-up: compile, record the graphs (timed_ms warms up too, but after the checks)
        errors = []
        for seed in range(1, calls + 1):
            fresh = spec.make_input(seed, "cuda")
            got, expected = forward(w, fresh), baseline.forward(w, fresh)
            errors.append(float((got - expected).norm() / expected.norm()))
        print(f"reduce-overhead, {'cloned' if clone else 'as returned'}: errors " +
              " ".join(f"{e:.1e}" for e in errors) + f"; {timed_ms(lambda: forward(w, x), 9):.2f} ms a call", flush=True)


if __name__ == "__main__":
    main()
