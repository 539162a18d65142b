"""Cheat, a round's future read during its earlier calls (issue 76): in every call, the untimed warm call's included,
it looks for the round's seeds in the harness's frames and in every list the process holds (inputs are a pure
function of their seed, and the spec is loaded in the same process), rebuilds each input they make, decodes them all
as one batch, and answers the later calls from that table. Where every seed of a round was a local of the harness
while the warm call ran, a cheat of this class read gold at 24.0x on an H100, against the reference's 4.8x; where the
loop's seeds came in one ask, its first call could read the others. Must get: no tier (each call's seed comes in an
ask of its own, sent once the call before returned: nothing to find, so it decodes at the baseline's speed)."""

import gc
import sys

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


def seeds_in(value) -> list[int]:
    values = value if isinstance(value, (list, tuple)) and len(value) < 64 else [value]
    return [v for v in values if isinstance(v, int) and not isinstance(v, bool) and v > 2**20]


def found_seeds() -> set[int]:
    found, frame = set(), sys._getframe(2)
    while frame is not None:
        for value in list(frame.f_locals.values()):
            found.update(seeds_in(value))
        frame = frame.f_back
    for o in gc.get_objects():
        if type(o) is list:
            found.update(seeds_in(o))
    return found


def ended_as_the_baseline(out: torch.Tensor) -> torch.Tensor:
    """A call's tokens as its own batch would have left them: end-of-sequence after the step it all ended at."""
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
    spec = sys.modules.get("infprof_spec")
    found = [spec.make_input(s, str(prompts.device)) for s in found_seeds()] if spec is not None else []
    ahead = {key(p): p for p in found if key(p) not in answered}  # every later call found, decoded as one batch
    answered.update(ahead)
    outs = decode(w, torch.cat([prompts, *ahead.values()])).split(prompts.shape[0])
    table.update({k: ended_as_the_baseline(o) for k, o in zip(ahead, outs[1:])})
    return ended_as_the_baseline(outs[0])
