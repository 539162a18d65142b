"""What the harness's tamper check costs (tutor/harness/guard.py): Guard.verify over what a worker watches, which
runs after every call of the learner's code in a grade, and the freeze that makes it once a workload has loaded.

    python benchmarks/guard_cost.py [--calls 200] [--json]

Prints the median milliseconds a verify and a freeze take in this process, with torch and the harness imported as a
worker has them, and how many namespaces and members they read.
"""

from __future__ import annotations

import argparse
import json
import statistics
import time
from types import ModuleType, SimpleNamespace

import torch  # noqa: F401 - a worker has it imported: its namespaces are among those watched

import tutor.harness.lockstep  # noqa: F401 - and the harness's modules a grade loads
from tutor.harness import guard
from tutor.harness.worker import Worker


def timed_ms(fn, calls: int) -> float:
    times = []
    for _ in range(calls):
        start = time.perf_counter()
        fn()
        times.append((time.perf_counter() - start) * 1e3)
    return statistics.median(times)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--calls", type=int, default=200)
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    strict, libraries = Worker._namespaces(SimpleNamespace(spec=ModuleType("spec"), device=SimpleNamespace()))
    checked = guard.Guard({})
    freeze_ms = timed_ms(lambda: checked.freeze(strict, libraries), max(args.calls // 10, 3))
    verify_ms = timed_ms(checked.verify, args.calls)
    # Nothing it watches changed: a verify that finds something is no figure (a timer set around this process, as
    # pytest-timeout's, is a hook the check names, and no namespace).
    changed = [v for v in checked.violations if "hook" not in v]
    assert not changed, changed
    figures = {"verify_ms": round(verify_ms, 3), "freeze_ms": round(freeze_ms, 3),
               "namespaces": len(strict) + len(libraries),
               "members": sum(len(guard._items(n)) for n in (*strict.values(), *libraries.values()))}
    if args.json:
        print(json.dumps(figures))
    else:
        print(f"verify {figures['verify_ms']} ms, freeze {figures['freeze_ms']} ms (medians): "
              f"{figures['namespaces']} namespaces, {figures['members']} members")


if __name__ == "__main__":
    main()
