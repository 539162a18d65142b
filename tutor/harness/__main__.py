"""The workload harness: `python -m tutor.harness REQUEST.json`, started by tutor.runner.

Runs in its own process so a crash, hang or OOM in learner code never touches the
tutor. Modes: `check` (correctness + interleaved timing, in two forked processes:
tutor.harness.lockstep), `serving` (a server replayed against a trace of requests, beside the
puzzle's: tutor.harness.serving_rounds) and, with one workload in this process, `profile` (a
PyTorch-profiler trace), `kernels`/`timeline` (under Nsight) and `memory`. Raw
samples go back; statistics are computed by the tutor.
"""

from __future__ import annotations

import json
import random
import sys
import traceback
from pathlib import Path

from tutor.harness.collector import imports_kept
from tutor.harness.events import EventSink
from tutor.harness.loading import HarnessFailure


def main(argv: list[str], run_request=None) -> int:
    """`run_request(request, sink)` makes the result: `run` below, or the ruler keeper's (tutor.harness.keeper)."""
    sink = EventSink()
    try:
        request = json.loads(Path(argv[0]).read_text())
        result = (run_request or run)(request, sink)
        sink.emit("result", data=result)
        return 0
    except HarnessFailure as f:
        print(f.tb or f.message, file=sys.stderr)
        sink.emit("error", kind=f.kind, message=f.message, where=f.where, traceback=f.tb[-4000:])
        return 3
    except Exception as e:  # a harness bug: still report it through the protocol
        tb = traceback.format_exc()
        print(tb, file=sys.stderr)
        sink.emit("error", kind="harness_bug", message=f"{type(e).__name__}: {e}", where="harness", traceback=tb[-4000:])
        return 4
    finally:
        sink.close()  # the tutor reads the pipe to its end: a process that lives on (the keeper) must close it


def run(request: dict, sink: EventSink) -> dict:
    sink.stage("importing", "torch")
    with imports_kept():
        import torch  # noqa: F401 - imported once here, before any fork, for every process of the run

    if request["mode"] == "check":
        from tutor.harness import lockstep
        return lockstep.check_and_time(request, sink)
    if request["mode"] == "serving":  # a server replayed against a trace of requests (issue 18)
        from tutor.harness import serving_rounds
        return serving_rounds.serve_and_compare(request, sink)
    from tutor.harness.alone import run_alone, run_alone_in_ranks  # profile, kernels, timeline, memory
    if request.get("ranks", 1) > 1:  # a multi-GPU workload: a process a GPU, as its grade runs it
        return run_alone_in_ranks(request, sink)
    return run_alone(request, sink)


if __name__ == "__main__":  # a cold run (a warm one is forked by tutor.harness.zygote, which ends it instead)
    import os

    from tutor.harness.processes import end_with_caller
    from tutor.protocol import CALLER_PID_ENV

    caller = os.environ.pop(CALLER_PID_ENV, None)  # read once; learner code sees the environment a warm run has
    if caller:  # absent under a profiler's wrapper
        end_with_caller(int(caller))
    random.seed()
    sys.exit(main(sys.argv[1:]))
