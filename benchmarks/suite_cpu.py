"""Where the test suite's CPU goes, test by test: a pytest plugin that reads the whole machine's busy time
(/proc/stat) around each test, so the runs a test's harness forks or starts count with it, wherever they run.

    PYTHONPATH=benchmarks .venv/bin/python -m pytest -q -p suite_cpu -n 0 --warm-when-ready \
        --also-cold tests/test_anticheat.py,... [--suite-cpu-json F]

One test process (-n 0): with several, each test would be charged the others' CPU too. Prints the total and its
shares (the --also-cold twins, the app, ptxas's compiles, the puzzles' other tests, the tests under 0.05 s) and the
15 dearest tests; --suite-cpu-json writes [nodeid, core-seconds, wall seconds] for every test. Linux only.
"""

from __future__ import annotations

import json
import os
import re
import time
from collections import defaultdict

import pytest

ROWS: list[tuple[str, float, float]] = []
CLOCK_TICKS = os.sysconf("SC_CLK_TCK")


def busy_seconds() -> float:
    """Core-seconds the whole machine has been busy since boot: user, nice, system, irq and softirq."""
    with open("/proc/stat") as stat:
        fields = [int(v) for v in stat.readline().split()[1:]]
    return sum(fields[i] for i in (0, 1, 2, 5, 6)) / CLOCK_TICKS


def share(nodeid: str) -> str:
    if "[cold" in nodeid:
        return "--also-cold's cold twins"
    if re.search(r"ptxas|compiles|spills", nodeid):  # the tests that build a CUDA source with nvcc, by their names
        return "CUDA sources compiled for ptxas's counts"
    nodeid = nodeid[max(nodeid.find("tests/"), 0):]  # from a clone, pytest may name its folder first (fc/tests/...)
    if nodeid.startswith(("tests/test_app.py", "tests/test_app_snapshots.py")):
        return "the app's tests and snapshots"
    if re.match(r"tests/test_puzzle\d+\.py", nodeid):
        return "the puzzles' other tests"
    return "the rest"


def pytest_addoption(parser):
    parser.addoption("--suite-cpu-json", metavar="FILE", help="every test's [nodeid, core-seconds, wall seconds]")


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_protocol(item, nextitem):
    busy, start = busy_seconds(), time.monotonic()
    yield
    ROWS.append((item.nodeid, busy_seconds() - busy, time.monotonic() - start))


def pytest_terminal_summary(terminalreporter, config):
    if not ROWS:
        return
    write = terminalreporter.write_line
    shares = defaultdict(lambda: [0.0, 0])
    for nodeid, cpu, _ in ROWS:
        counted = shares[share(nodeid)]
        counted[0] += cpu
        counted[1] += 1
    cheap = [cpu for _, cpu, _ in ROWS if cpu < 0.05]
    write(f"suite CPU: {sum(cpu for _, cpu, _ in ROWS):.0f} core-seconds of the machine's in {len(ROWS)} tests")
    for name, (cpu, count) in sorted(shares.items(), key=lambda kv: -kv[1][0]):
        write(f"  {name}: {cpu:.0f} in {count} tests")
    write(f"  tests under 0.05 s: {sum(cheap):.0f} in {len(cheap)} tests")
    write("dearest tests (core-seconds, wall seconds):")
    for nodeid, cpu, wall in sorted(ROWS, key=lambda row: -row[1])[:15]:
        write(f"  {cpu:6.1f} {wall:6.1f}  {nodeid}")
    if config.getoption("suite_cpu_json"):
        with open(config.getoption("suite_cpu_json"), "w") as out:
            json.dump(ROWS, out)
