"""Cheat, the harness's own work made to run the workload's (issue 76): in prepare() it registers a kernel of its
own for aten::zero_, the operator the harness flushes L2 with before the call clock starts, when every input of
the loop already exists. The kernel flushes as asked (by another operator) and then processes every step's logits
it finds alive, outside the clock; forward() answers from that table. Must get: refused as tampered before any
input is made, the message naming aten::zero_ (the harness reads the kernels of the operators it uses again after
prepare())."""

import gc

import torch

_library = torch.library.Library("aten", "IMPL")
table: dict[tuple, torch.Tensor] = {}
state: dict = {}


def log_probs(logits: torch.Tensor, temperature: torch.Tensor, bias: torch.Tensor) -> torch.Tensor:
    return torch.log_softmax(logits.float() / temperature[:, None] + bias, dim=-1)


def key(logits: torch.Tensor) -> tuple:
    return (logits.shape[0], *logits[0, :4].float().tolist())


def zero_(buffer: torch.Tensor) -> torch.Tensor:
    buffer.fill_(0)  # the flush asked for
    for o in gc.get_objects():
        if (type(o) is tuple and len(o) == 2 and all(type(t) is torch.Tensor for t in o)
                and o[0].is_cuda and o[0].dtype == torch.bfloat16 and o[0].dim() == 2):
            table[key(o[0])] = log_probs(o[0], o[1], state["bias"])
    return buffer


def prepare(weights: dict, device: str):
    state["bias"] = weights["bias"]
    _library.impl("zero_", zero_, "CUDA")
    return state


def forward(state: dict, steps: list) -> torch.Tensor:
    out = []
    for logits, temperature in steps:
        found = table.pop(key(logits), None)
        out.append(found if found is not None else log_probs(logits, temperature, state["bias"]))
    return torch.cat(out)
