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


def kept(out):
    """The output as it was when forward() returned: work finished later (a side thread) is not in it.

    Only a plain tensor is copied: a subclass could run code of its own when touched.
    """
    return out.detach().clone() if type(out) is torch.Tensor else out


def scrub(out) -> None:
    """Zero an output about to be freed: the candidate's next allocation could get its memory, answer and all."""
    if type(out) is torch.Tensor:
        try:
            with torch.inference_mode():  # the only way to write into an inference-mode output
                out.detach().zero_()
        except RuntimeError:
            pass  # an expanded view cannot be written; nothing of its own to hand over either


def compare(out, ref) -> dict:
    """Relative L2 error and structural mismatches between an output and the oracle's."""
    if type(out) is not torch.Tensor:
        what = ("a tensor subclass, not a plain torch.Tensor" if isinstance(out, torch.Tensor)
                else "not a tensor")
        return {"ok_structure": False, "problem": f"forward() returned {type(out).__name__}, {what}"}
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
