"""What the one-GPU sweeps that measure each workload in a process of its own share: the script runs itself once
a workload (`--workload NAME` plus its own flags), so no workload's compiled kernels, allocator or cuBLAS state
reaches the next, and reads the figures the child prints last, as JSON."""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Iterator


def each_in_its_own_process(script: str, workloads: list[str], flags: list[str]) -> Iterator[tuple[str, dict]]:
    """(workload, its figures) for each workload whose process ended well; a failed one is printed, with the last
    line of its error, and skipped."""
    for workload in workloads:
        run = subprocess.run([sys.executable, script, *flags, "--workload", workload], capture_output=True, text=True)
        if run.returncode:
            print(f"{workload:36s} failed: {run.stderr.strip().splitlines()[-1:]}", flush=True)
            continue
        yield workload, json.loads(run.stdout.strip().splitlines()[-1])
