"""Cheat, the harness's own work made to run the workload's (issue 76): in prepare() it registers a kernel of its
own for aten::zero_, the operator the harness flushes L2 with before the call clock starts, when every input of
the loop already exists. The kernel flushes as asked (by another operator) and then normalises every input-shaped
tensor it finds alive, outside the clock; forward() answers from that table. Must get: refused as tampered before
any input is made, the message naming aten::zero_ (the harness reads the kernels of the operators it uses again
after prepare())."""

import gc

import torch

_library = torch.library.Library("aten", "IMPL")
table: dict[tuple, torch.Tensor] = {}
state: dict = {}


def key(t: torch.Tensor) -> tuple:
    return tuple(t[0, :4].tolist())


def norm(x: torch.Tensor, gain: torch.Tensor) -> torch.Tensor:
    return x * torch.rsqrt(x.pow(2).mean(dim=1, keepdim=True) + 1e-6) * gain


def zero_(buffer: torch.Tensor) -> torch.Tensor:
    buffer.fill_(0)  # the flush asked for
    for o in gc.get_objects():
        if type(o) is torch.Tensor and o.is_cuda and o.dim() == 2 and o.dtype == torch.float32 and o is not buffer:
            if o.shape[1] == state["gain"].shape[0]:
                table[key(o)] = norm(o, state["gain"])
    return buffer


def prepare(weights: dict, device: str):
    state.update(weights)
    _library.impl("zero_", zero_, "CUDA")
    return weights


def forward(weights: dict, x: torch.Tensor) -> torch.Tensor:
    found = table.pop(key(x), None)
    return found if found is not None else norm(x, weights["gain"])
