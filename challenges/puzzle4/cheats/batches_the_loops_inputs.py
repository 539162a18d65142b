"""Cheat, the loop's later calls worked out on its first (issue 76): on every call it finds every other input of the
puzzle's kind alive that it has not answered (the garbage collector's objects: int64 prompts of its own shape on
its device), decodes them with its own as one batch with the baseline's step, and answers those calls from that
table. Where the call clock's inputs are made together before its first call, a cheat of this class read gold at
3.6x on an H100 without touching the launches the puzzle teaches. Must get: no tier (each input of the loop is made
only once the call before it returned, on the CPU and on CUDA alike: nothing ahead to find, so it decodes at the
baseline's speed)."""

import gc

import torch

STEPS, EOS, MEMORY, HIDDEN = 96, 0, 256, 512
table: dict[str, torch.Tensor] = {}
answered: set[str] = set()


def prepare(weights: dict, device: str):
    return weights


def step(w: dict, tokens: torch.Tensor, memory: torch.Tensor):
    mixed = memory @ w["mix"]
    h = w["embed"][tokens] + mixed[:, :HIDDEN].to(torch.bfloat16)
    h = torch.addmm(h, torch.relu(h @ w["w1"].T), w["w2"].T)
    tokens = (h @ w["out"].T).argmax(dim=-1)
    memory = torch.tanh(torch.addmm(mixed[:, HIDDEN:], h.float(), w["write"]))
    return tokens, memory


def decode(w: dict, prompts: torch.Tensor) -> torch.Tensor:
    """The baseline's decode of several calls' prompts at once, until all of them have ended."""
    memory = torch.zeros(prompts.shape[0], MEMORY, device=prompts.device)
    for j in range(prompts.shape[1] - 1):
        _, memory = step(w, prompts[:, j], memory)
    tokens = prompts[:, -1]
    out = torch.full((prompts.shape[0], STEPS), EOS, dtype=torch.long, device=prompts.device)
    for i in range(STEPS):
        tokens, memory = step(w, tokens, memory)
        out[:, i] = tokens
        if (tokens == EOS).all():
            break
    return out


def ended_as_the_baseline(out: torch.Tensor) -> torch.Tensor:
    """A call's tokens as its own batch would have left them: end-of-sequence after the step it all ended at (the
    batch decoded with it went on, and a sequence past its end need not keep to end-of-sequence)."""
    done = (out == EOS).all(dim=0).nonzero()
    if len(done):
        out[:, int(done[0]) + 1:] = EOS
    return out


def key(prompts: torch.Tensor) -> str:
    return repr(prompts[:, :4].tolist())


def forward(w: dict, prompts: torch.Tensor) -> torch.Tensor:
    answered.add(key(prompts))
    out = table.pop(key(prompts), None)
    if out is not None:
        return out
    ahead = {key(o): o for o in gc.get_objects()
             if type(o) is torch.Tensor and o.dtype == prompts.dtype and o.shape == prompts.shape
             and o.device == prompts.device and key(o) not in answered}
    answered.update(ahead)
    outs = [ended_as_the_baseline(o) for o in decode(w, torch.cat([prompts, *ahead.values()])).split(prompts.shape[0])]
    table.update(zip(ahead, outs[1:]))
    return outs[0]
