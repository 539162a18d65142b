"""Every timed call's output, kept as it returned and checked after the clock stops.

A round's calls are all checked, the untimed warm call included, so no call is worth skipping:
- in the clock, right after each call, the output is kept: a GPU tensor copied on the caller's stream
  (a later call may overwrite it, as a graph's static output is, and work a thread queues after the call
  returned lands after the copy), a host tensor kept as it is (it is the caller's to keep through the
  round: a buffer a later call fills again reads the later call's answer, and fails) with a few of its
  values read at once, at places drawn only then, so a copy still landing after forward() returned is
  seen as its caller would see it. Neither runs an aten operator (tutor.harness.raw_copy): the call may have
  left a kernel of its own registered for one, which the check of the table before the harness's next work
  (tutor.harness.dispatch_table) finds, but only after it ran;
- after the clock, the coordinator draws a seed and every kept output is sampled at the places it
  makes, the oracle's at the same places (tutor.harness.checks.compare). The places are drawn after
  every call returned, so no workload can compute only those.
Both sides pay the same: one copy launched a call, or a few hundred values read (benchmarks/check_cost.py).
"""

from __future__ import annotations

import torch

from tutor.harness import wire
from tutor.harness.dispatch_table import function_modes
from tutor.harness.loading import HarnessFailure
from tutor.harness.raw_copy import DeviceCopy, HostBytes

STILL_WRITTEN = ("the output was still being written after forward() returned: wait for its copies (an event's or "
                 "a stream's synchronize()) before returning it, as the caller reads it at once")
SAMPLED = 16384  # values compared of each output; an output this small or smaller is compared whole
EARLY = 256  # values of a host output read as forward() returns


def _places(numel: int, count: int, seed: int) -> torch.Tensor:
    if numel <= count:
        return torch.arange(numel)
    return torch.randint(numel, (count,), generator=torch.Generator().manual_seed(seed))


_function_modes = torch._C._len_torch_function_stack
_dispatch_modes = torch._C._len_torch_dispatch_stack


def refuse_modes_left_entered() -> None:
    """After every call: a torch function or dispatch mode it entered and did not leave would see every method the
    harness calls on its output next (its data_ptr, its strides), so the run stops, as for any change to what the
    harness's work runs. Two reads of a stack's length: free beside a call."""
    if _function_modes() or _dispatch_modes():
        named = "; ".join(function_modes()) or "a dispatch mode"
        raise HarnessFailure("tampered", f"Your forward() returned with a mode still entered ({named}): the "
                             "harness's own work on its output would run your code. Enter modes in a with block "
                             "inside forward().")


class Kept:
    """One call's output as the harness keeps it until the round is checked."""

    def __init__(self, out):
        self.problem, self.tensor, self.early = "", None, None
        if type(out) is not torch.Tensor:
            what = "a tensor subclass, not a plain torch.Tensor" if isinstance(out, torch.Tensor) else "not a tensor"
            self.problem = f"forward() returned {type(out).__name__}, {what}"
            return
        # In the clock, after learner code ran (and no mode left entered: refuse_modes_left_entered): no aten operator
        # (tutor.harness.raw_copy).
        self.cuda = out.is_cuda
        self.strides = wire.strides(out)
        self._copy = DeviceCopy(out) if self.cuda else None
        self.tensor = None if self.cuda else out
        if not self.cuda and self.strides is None and out.numel():
            self.early = HostBytes(out, EARLY)

    def sample(self, seed: int) -> dict:
        """The output at the places `seed` draws, with what shows its structure; or what it is instead. After the
        clock, with checked operators."""
        if self.problem:
            return {"problem": self.problem}
        if self._copy is not None:
            self.tensor, self._copy = self._copy.tensor(), None
        if self.early is not None and self.early.changed(self.tensor):
            return {"problem": STILL_WRITTEN}
        return sampled(self.tensor, seed, cuda=self.cuda, strides=self.strides)


def sampled(tensor: torch.Tensor, seed: int, cuda: bool, strides=None) -> dict:
    """`tensor`'s values at the places `seed` draws for its size, as tutor.harness.checks.compare reads them."""
    places = _places(tensor.numel(), SAMPLED, seed)
    values = tensor.reshape(-1)[places.to(tensor.device)].to("cpu")
    return {"tensor": values, "cuda": cuda, "shape": tuple(tensor.shape), "dtype": str(tensor.dtype),
            "strides": strides, "whole": tensor.numel() <= SAMPLED}


# One output of each round, drawn after the round, of the candidate and the oracle also travels to the coordinator
# whole, to be compared whole; past this many values only its samples are compared, as every other call's are (the
# untimed checks stay whole). Copying and comparing four 133 MB outputs a round cost puzzle22's 40 rounds about a minute on the H100,
# and samples drawn after the calls returned are no easier to answer than the whole.
WHOLE_LIMIT = 1 << 24


def read_whole(seed: int, out) -> list:
    """[[seed, `out` copied whole]] for the coordinator's whole comparison, or [] for a tensor over WHOLE_LIMIT
    values."""
    if isinstance(out, torch.Tensor) and out.numel() > WHOLE_LIMIT:
        return []
    return [[seed, wire.portable(out)]]


def probe_outputs(device: str) -> list[torch.Tensor]:
    """Outputs of every kind whose reading (`read_round`) takes a way of its own through torch's operators, for a dry
    run that lists them (tutor.harness.worker.Worker._reading_table): on the host and on `device`; contiguous,
    strided (a view reshape copies, and one it aliases), broadcast (a stride of 0), 0-d and empty; at most SAMPLED
    values (read whole) and more (read at drawn places); in a float, a half, an integer and a bool dtype."""
    shapes = [lambda t: t[:32].reshape(4, 8), lambda t: t[:32].reshape(4, 8).t(), lambda t: t[:8].expand(4, 8),
              lambda t: t[:64:2], lambda t: t[0], lambda t: t[:0], lambda t: t]
    dtypes = (torch.float32, torch.bfloat16, torch.int64, torch.bool)
    return [shape(torch.ones(SAMPLED + 1, device=where).to(dtype))
            for where in dict.fromkeys(["cpu", device]) for dtype in dtypes for shape in shapes]


def read_round(outputs: list, seed: int = 0) -> None:
    """What the worker does to a round's outputs once the round is over (Worker.sampled), for a dry run of it: each
    kept as the clock keeps it, sampled, and read whole."""
    kept = [Kept(out) for out in outputs]
    samples(kept, seed)
    for k in kept:
        read_whole(seed, k.tensor)


REUSED = ("a later call of the round wrote into the output this call returned: forward() must return results the "
          "caller keeps (a fresh tensor each call, not a buffer it fills again)")


def samples(kept: list[Kept], seed: int) -> list[dict]:
    """A round's kept outputs, in call order, at the places `seed` draws; an output a later call returned again
    (the same host buffer, filled anew) is named for that, not read."""
    later = set()
    found = []
    for k in reversed(kept):
        where = k.tensor.data_ptr() if k.tensor is not None and not k.cuda and k.tensor.numel() else None
        found.append({"problem": REUSED} if where is not None and where in later else k.sample(seed))
        later.add(where)
    return found[::-1]
