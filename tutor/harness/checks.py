"""Correctness: the learner's output against the oracle's, on fresh inputs."""

from __future__ import annotations

import torch


def compare(out, ref) -> dict:
    """Relative L2 error and structural mismatches between an output and the oracle's."""
    if not isinstance(out, torch.Tensor):
        return {"ok_structure": False, "problem": f"forward() returned {type(out).__name__}, not a tensor"}
    if out.shape != ref.shape:
        return {"ok_structure": False, "problem": f"output shape {tuple(out.shape)} != expected {tuple(ref.shape)}"}
    if out.dtype != ref.dtype:
        return {"ok_structure": False, "problem": f"output dtype {out.dtype} != expected {ref.dtype}"}
    o, r = out.detach().double().cpu(), ref.detach().double().cpu()
    if not torch.isfinite(o).all():
        problem = "output contains NaN or Inf"
        if out.is_cuda:
            # Device.poison_free_memory fills freed GPU memory with NaN bytes after prepare().
            problem += (" (after prepare(), freed GPU memory is filled with NaN: does a CUDA graph"
                        " read a tensor your state no longer keeps alive?)")
        return {"ok_structure": False, "problem": problem}
    rel = (torch.linalg.vector_norm(o - r) / torch.linalg.vector_norm(r).clamp_min(1e-30)).item()
    return {"ok_structure": True, "rel_l2": rel, "max_abs": (o - r).abs().max().item()}
