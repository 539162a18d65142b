"""Record the CUDA caching allocator's history of one workload, for `--profiler memory`.

Recording starts before the weights are made and stops after the profiled iterations; every
allocation and free keeps its Python stack. Each phase runs through a function named after it
(tutor.protocol.MEMORY_PHASES), so the stack of every event names its phase: no clock has to
agree with the allocator's. The snapshot is pickled as torch writes it: PyTorch's memory viewer
opens it as it is, and tutor.profilers.memory_snapshot reads it.
"""

from __future__ import annotations

import pickle
from pathlib import Path

# The ring buffer keeps the newest this many events (tutor.profilers.memory_snapshot anchors what it
# dropped): a puzzle's run makes a few thousand to tens of thousands, and reading 200,000 with
# 30-frame stacks takes 3.5 s and 1.2 GB on the 2-core machine (benchmarks/memory_snapshot_parse.py).
MAX_ENTRIES = 200_000


def start() -> None:
    import torch

    torch.cuda.memory._record_memory_history(enabled="all", context="all", stacks="python", max_entries=MAX_ENTRIES)


def save(path: Path) -> None:
    """Write the snapshot and stop recording."""
    import torch

    snapshot = torch.cuda.memory._snapshot()
    torch.cuda.memory._record_memory_history(enabled=None)
    with open(path, "wb") as f:
        pickle.dump(snapshot, f)


# One function per phase, named as tutor.protocol.MEMORY_PHASES says: they are what the stacks show.
def infprof_phase_prepare(fn, *args):
    return fn(*args)


def infprof_phase_warmup(fn, *args):
    return fn(*args)


def infprof_phase_iterations(fn, *args):
    return fn(*args)


PHASE_FUNCTIONS = {"prepare": infprof_phase_prepare, "warmup": infprof_phase_warmup,
                   "iterations": infprof_phase_iterations}


def in_phase(phase: str, fn, *args):
    """fn(*args), inside the function that marks `phase` in the allocator's stacks."""
    return PHASE_FUNCTIONS[phase](fn, *args)
