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
    """Relative L2 error and structural mismatches between two outputs as tutor.harness.wire.portable gives them,
    or as tutor.harness.call_checks samples them (then "sampled" when only part of each output was compared)."""
    if "problem" in out:
        return {"ok_structure": False, "problem": out["problem"]}
    problem = _structure(out, ref)
    if problem:
        return {"ok_structure": False, "problem": problem}
    o, r = out["tensor"], ref["tensor"]
    sampled = {"sampled": True, "sampled_values": o.numel()} if out.get("whole") is False else {}
    if torch.equal(o, r):  # the common case, and cheap: a large output checked every round costs no float64 copies
        return {"ok_structure": True, "rel_l2": 0.0, "max_abs": 0.0, "on_gpu": out["cuda"], **sampled}
    o, r = o.double(), r.double()
    if not torch.isfinite(o).all():
        problem = "output contains NaN or Inf"
        if out["cuda"]:
            # Device.poison_free_memory fills freed GPU memory with NaN bytes after prepare().
            problem += (" (after prepare(), freed GPU memory is filled with NaN: does a CUDA graph"
                        " read a tensor your state no longer keeps alive?)")
        return {"ok_structure": False, "problem": problem}
    rel = (torch.linalg.vector_norm(o - r) / torch.linalg.vector_norm(r).clamp_min(1e-30)).item()
    return {"ok_structure": True, "rel_l2": rel, "max_abs": (o - r).abs().max().item(), "on_gpu": out["cuda"],
            **sampled}


def _structure(out: dict, ref: dict) -> str:
    """What makes `out` unusable where the oracle's output is used, whatever its values: shape, dtype, layout."""
    shape, expected = out.get("shape", tuple(out["tensor"].shape)), ref.get("shape", tuple(ref["tensor"].shape))
    if tuple(shape) != tuple(expected):
        return f"output shape {tuple(shape)} != expected {tuple(expected)}"
    dtype, expected = str(out.get("dtype", out["tensor"].dtype)), str(ref.get("dtype", ref["tensor"].dtype))
    if dtype != expected:
        return f"output dtype {dtype} != expected {expected}"
    if out.get("strides") and not ref.get("strides"):
        return (f"output is a strided view (strides {tuple(out['strides'])}), not laid out as the oracle's: the caller "
                "reads it as a contiguous tensor, so return one (.contiguous() costs a copy the clock sees)")
    return ""
