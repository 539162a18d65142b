"""Every Python process started fresh while a command runs, with its own CPU: where a suite's fresh interpreters go.

    INFPROF_PROCESS_LOG=F PYTHONPATH=benchmarks/process_log make test     # each process appends a line to F
    .venv/bin/python benchmarks/process_log/sitecustomize.py F            # their count and CPU by kind

Python runs this module as it starts (a sitecustomize on the path; the harness keeps its caller's PYTHONPATH, so
its cold runs log too). At exit each process writes its command line, whether it imported torch, its own CPU (not
its children's) and the test it ran for (PYTEST_CURRENT_TEST). Forked children are not logged (they end with
os._exit, and share their parent's start), nor are processes killed outright or started with another environment.
"""

from __future__ import annotations

import atexit
import os
import sys
import time

_LOG, _PID, _STARTED = os.environ.get("INFPROF_PROCESS_LOG"), os.getpid(), time.monotonic()


def _write() -> None:
    if os.getpid() != _PID:  # a forked child that exited through Python
        return
    import json
    import resource

    usage = resource.getrusage(resource.RUSAGE_SELF)
    line = {"argv": sys.argv[:6], "torch": "torch" in sys.modules, "cpu_s": round(usage.ru_utime + usage.ru_stime, 2),
            "wall_s": round(time.monotonic() - _STARTED, 2), "test": os.environ.get("PYTEST_CURRENT_TEST", "")}
    with open(_LOG, "a") as log:
        log.write(json.dumps(line) + "\n")


def summary(path: str) -> None:
    import json
    from collections import defaultdict

    kinds = defaultdict(lambda: [0, 0.0])
    for line in open(path):
        row = json.loads(line)
        program = row["argv"][0] if row["argv"] else "?"
        if program.endswith("__main__.py"):  # python -m PACKAGE: the package names it
            program = os.path.dirname(program)
        kind = (os.path.basename(program), "imports torch" if row["torch"] else "",
                "a cold twin's" if "[cold" in row["test"] else "")
        kinds[kind][0] += 1
        kinds[kind][1] += row["cpu_s"]
    for (program, torch, twin), (count, cpu) in sorted(kinds.items(), key=lambda kv: -kv[1][1]):
        print(f"{cpu:8.1f} core-s {count:5d} x {program} {torch} {twin}".rstrip())


if __name__ == "__main__":
    summary(sys.argv[1])
elif _LOG:
    atexit.register(_write)
