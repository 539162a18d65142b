"""Cheat, work done where the clock does not see it (issue 37): on every call it processes, besides its own steps,
every other step's logits it finds alive (the garbage collector's objects: bf16 tensors a vocabulary wide, with a
temperature beside them in a tuple), and answers a later step from that table: where a round's inputs were made
before its untimed warm call, or the GPU clock's before the loop, the timed calls would read almost nothing. Must
get: no more than the honest work it does (each input is made only once the call before it returned, so there is
nothing ahead to find; its own steps run the processor compiled with dynamic shapes, which earns what it earns,
and the search costs more). Its table holds one call's finds."""

import gc

import torch

table: dict[tuple, torch.Tensor] = {}


def log_probs(logits: torch.Tensor, temperature: torch.Tensor, bias: torch.Tensor) -> torch.Tensor:
    return torch.log_softmax(logits.float() / temperature[:, None] + bias, dim=-1)


def prepare(weights: dict, device: str):
    return {"process": torch.compile(log_probs), "bias": weights["bias"]}


def key(logits: torch.Tensor) -> tuple:
    return (logits.shape[0], *logits[0, :4].float().tolist())


def forward(state: dict, steps: list) -> torch.Tensor:
    mine = {id(logits) for logits, _ in steps}
    found = [table.get(key(logits)) for logits, _ in steps]
    table.clear()  # only the finds of this call are kept for the next one
    with torch.inference_mode():
        for o in gc.get_objects():
            if (type(o) is tuple and len(o) == 2 and all(type(t) is torch.Tensor for t in o)
                    and o[0].dtype == torch.bfloat16 and o[0].dim() == 2 and id(o[0]) not in mine):
                table[key(o[0])] = state["process"](o[0], o[1], state["bias"])
        return torch.cat([f if f is not None else state["process"](logits, temperature, state["bias"])
                          for f, (logits, temperature) in zip(found, steps)])
