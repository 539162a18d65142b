"""Cheat, the loop's later calls worked out on its first (issue 76): on every call it finds every other input of the
puzzle's kind alive that it has not answered (the garbage collector's objects: int64 prompts of its own shape on
its device), decodes them with its own as one batch with the baseline's step, and answers those calls from that
table. Where the call clock's inputs are made together before its first call, a cheat of this class read gold at
3.6x on an H100 without touching the launches the puzzle teaches. Must get: no tier, once each input of the loop
is made only after the call before it returned: so on the CPU (tests/test_every_call_checked.py); on CUDA the
loop's inputs are still made before it, and its grades are owed until they are not (issue 76)."""

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
    return tokens, memory @ w["gate"], memory


def decode(w: dict, prompts: torch.Tensor, batch: int) -> torch.Tensor:
    """The baseline's decode of several calls' prompts at once, each call's scores zero past the step its own
    batch of `batch` sequences ended at, as the baseline leaves them."""
    memory = torch.zeros(prompts.shape[0], MEMORY, device=prompts.device)
    for j in range(prompts.shape[1] - 1):
        _, _, memory = step(w, prompts[:, j], memory)
    tokens = prompts[:, -1]
    out = torch.zeros(prompts.shape[0], STEPS, device=prompts.device)
    ended = torch.zeros(prompts.shape[0] // batch, STEPS, dtype=torch.bool, device=prompts.device)
    for i in range(STEPS):
        tokens, out[:, i], memory = step(w, tokens, memory)
        ended[:, i] = (tokens == EOS).view(-1, batch).all(dim=1)
        if ended[:, i].all():
            break
    after_end = (ended.cumsum(dim=1) - ended.int()) > 0  # steps after the one each call's batch ended at
    return out.masked_fill(after_end.repeat_interleave(batch, dim=0), 0.0)


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
    outs = decode(w, torch.cat([prompts, *ahead.values()]), prompts.shape[0]).split(prompts.shape[0])
    table.update(zip(ahead, outs[1:]))
    return outs[0]
