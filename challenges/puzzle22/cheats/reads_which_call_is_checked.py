"""Cheat, one checked call in a timed loop (issue 37): reads the harness's frames to tell which call it is in and
returns zeros on every call but the call clock's last (the warm call, the loop's others, and the GPU clock's call,
the one the tiers are read from), the processor compiled with dynamic shapes on that one. Where only that last
call were checked, the GPU clock would time an allocation and read a speed-up far above gold. Must get: refused at
correctness (every call of a round is checked, the warm call and the GPU clock's too)."""

import sys

import torch


def log_probs(logits: torch.Tensor, temperature: torch.Tensor, bias: torch.Tensor) -> torch.Tensor:
    return torch.log_softmax(logits.float() / temperature[:, None] + bias, dim=-1)


def prepare(weights: dict, device: str):
    return {"process": torch.compile(log_probs), "bias": weights["bias"]}


def unchecked() -> bool:
    """Whether the harness frames above say this is the warm call, the GPU clock's, or a loop call before its last."""
    frame = sys._getframe(2)
    while frame is not None:
        names = frame.f_locals
        if frame.f_code.co_name in ("warm_call", "time_call_ms"):
            return True
        seeds = names.get("seeds")  # the call clock's loop: the seeds of its calls, and the one being called
        if isinstance(seeds, list) and seeds and "seed" in names and names["seed"] != seeds[-1]:
            return True
        frame = frame.f_back
    return False


def forward(state: dict, steps: list) -> torch.Tensor:
    if unchecked():
        return torch.zeros(sum(logits.shape[0] for logits, _ in steps), steps[0][0].shape[1],
                           device=steps[0][0].device)
    with torch.inference_mode():
        return torch.cat([state["process"](logits, temperature, state["bias"]) for logits, temperature in steps])
