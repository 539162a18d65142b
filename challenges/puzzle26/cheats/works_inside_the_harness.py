"""Cheat, the harness's own work made to run the workload's (issue 76): in prepare() it registers a kernel of its
own for aten::_to_copy, the operator the harness's input making runs last on every rank (the hidden states drawn
in fp32, then made bf16). The kernel makes the copy and, when it is a batch's hidden states, runs the baseline's
whole forward on them there, both ranks at once as both make the same input, collectives included; forward()
then returns the answer kept, its work done in the harness's untimed making. Through the real harness on two
gloo ranks on the CPU, every check passed before the harness read its own operators' kernels again. Must get:
refused as tampered before any input is made, the message naming aten::_to_copy."""

import importlib.util
from pathlib import Path

import torch

_spec = importlib.util.spec_from_file_location("the_baseline", Path(__file__).parents[1] / "baseline.py")
baseline = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(baseline)
_library = torch.library.Library("aten", "IMPL")
kept, inside = {}, [False]


def key(x: torch.Tensor) -> tuple:
    return tuple(x[0, :8].float().tolist())


def prepare(weights: dict, device: str):
    state = baseline.prepare(weights, device)

    def to_copy(x, dtype=None, layout=None, device=None, pin_memory=None, non_blocking=False, memory_format=None):
        out = torch.empty(x.shape, dtype=dtype or x.dtype, device=device or x.device)
        out.copy_(x)  # the copy asked for, by operators of another name
        if not inside[0] and out.dtype == torch.bfloat16 and out.dim() == 2:
            inside[0] = True
            try:
                kept[key(out)] = baseline.forward(state, out)
            finally:
                inside[0] = False
        return out

    for dispatch_key in ("CPU", "CUDA"):
        _library.impl("_to_copy", to_copy, dispatch_key)
    return state


def forward(state, x: torch.Tensor) -> torch.Tensor:
    found = kept.pop(key(x), None)
    return found if found is not None else baseline.forward(state, x)
