"""Runs a learner's Python command under the PyTorch profiler, in the subprocess `diagnose` starts (torch is imported
here, never in the tutor's own process).

    python -m tutor.diagnose.profiled TRACE [--marked] -- SCRIPT.py ARGS... | -m MODULE ARGS...

The whole command is one profiled window, unless --marked: then only the ranges the command itself opens with
torch.profiler.record_function("infprof:iter"), one a step. The trace goes to TRACE, the allocator's and the compiler's
figures beside it (TRACE.memory.json). Exits with the command's own exit status.
"""

from __future__ import annotations

import json
import runpy
import sys
from contextlib import nullcontext
from pathlib import Path

from tutor.protocol import TORCH_ITER_RANGE


def main(argv: list[str]) -> int:
    trace, rest = Path(argv[0]), argv[1:]
    marked = "--marked" in rest[: rest.index("--")]
    command = rest[rest.index("--") + 1:]
    import torch
    from torch.profiler import ProfilerActivity, profile, record_function

    from tutor.harness.compile_report import CompileWatch
    from tutor.harness.memory_facts import CaptureCounter, memory_facts

    cuda = torch.cuda.is_available()
    # The puzzles' own probes: torch.compile's graphs and recompiles, the CUDA graphs captured and their pools.
    compiled, captures = CompileWatch(), CaptureCounter() if cuda else None
    activities = [ProfilerActivity.CPU] + ([ProfilerActivity.CUDA] if cuda else [])
    status = 0
    with profile(activities=activities, profile_memory=True) as prof:
        with nullcontext() if marked else record_function(TORCH_ITER_RANGE):
            status = _run(command)
        if cuda:
            torch.cuda.synchronize()
    prof.export_chrome_trace(str(trace))
    facts = {**(memory_facts(captures) if cuda else {}), **compiled.report()}
    facts.pop("reasons", None)
    trace.with_name(trace.name + ".memory.json").write_text(json.dumps(facts))
    return status


def _run(command: list[str]) -> int:
    """The command as `python` would run it: a script, or -m and a module; its SystemExit is its status."""
    target, args = (command[1], command[2:]) if command[0] == "-m" else (command[0], command[1:])
    sys.argv = [target, *args]
    try:
        if command[0] == "-m":
            runpy.run_module(target, run_name="__main__", alter_sys=True)
        else:
            sys.path.insert(0, str(Path(target).resolve().parent))
            runpy.run_path(target, run_name="__main__")
    except SystemExit as done:
        return done.code if isinstance(done.code, int) else (0 if done.code is None else 1)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
