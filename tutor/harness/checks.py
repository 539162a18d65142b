"""Correctness: the learner's output against the oracle's, on fresh inputs."""

from __future__ import annotations

import torch


def own_copy(x):
    """A private copy of an input: a workload that writes into its input changes no one else's."""
    if isinstance(x, torch.Tensor):
        return x.clone()
    if isinstance(x, (list, tuple)):
        return type(x)(own_copy(v) for v in x)
    if isinstance(x, dict):
        return {k: own_copy(v) for k, v in x.items()}
    return x


def compare(out: dict, ref: dict) -> dict:
    """Relative L2 error and structural mismatches between two outputs as tutor.harness.wire.portable gives them."""
    if "problem" in out:
        return {"ok_structure": False, "problem": out["problem"]}
    o, r = out["tensor"], ref["tensor"]
    if o.shape != r.shape:
        return {"ok_structure": False, "problem": f"output shape {tuple(o.shape)} != expected {tuple(r.shape)}"}
    if o.dtype != r.dtype:
        return {"ok_structure": False, "problem": f"output dtype {o.dtype} != expected {r.dtype}"}
    if torch.equal(o, r):  # the common case, and cheap: a large output checked every round costs no float64 copies
        return {"ok_structure": True, "rel_l2": 0.0, "max_abs": 0.0, "on_gpu": out["cuda"]}
    o, r = o.double(), r.double()
    if not torch.isfinite(o).all():
        problem = "output contains NaN or Inf"
        if out["cuda"]:
            # Device.poison_free_memory fills freed GPU memory with NaN bytes after prepare().
            problem += (" (after prepare(), freed GPU memory is filled with NaN: does a CUDA graph"
                        " read a tensor your state no longer keeps alive?)")
        return {"ok_structure": False, "problem": problem}
    rel = (torch.linalg.vector_norm(o - r) / torch.linalg.vector_norm(r).clamp_min(1e-30)).item()
    return {"ok_structure": True, "rel_l2": rel, "max_abs": (o - r).abs().max().item(), "on_gpu": out["cuda"]}
