"""Puzzle 7 on one CUDA GPU: each style's time a call, and the host copy that decides it, by torch's
CPU thread count, in this process and in a child forked after `import torch` (as the warm harness forks).

    PYTHONPATH=. python challenges/puzzle7/sweeps/copy_threads.py [--calls 15]

Printed per thread count: the baseline, the reference and each alternative (median, min and max ms a
call, a fresh input for each call made outside the timer), and the rates behind them: a 32 MB batch
copied pageable -> pinned by torch's copy_ (host memcpy, torch's thread pool), pageable -> GPU (the
driver's staging) and pinned -> GPU (DMA). Results: challenges/puzzle7/MEASUREMENTS.md.

Beside each thread count: how often the kernel's CPU bandwidth control throttled this process's cgroup
meanwhile (cgroup v2 cpu.stat). The first run's reference calls sat at 64.0 ms or 11-13 ms: a quota
smaller than the CPUs torch's thread pool starts (cpu.max) would throttle a many-threaded copy so.
"""

from __future__ import annotations

import argparse
import importlib.util
import os
import statistics
import time
from pathlib import Path

import torch

PUZZLE = Path(__file__).resolve().parent.parent


def load(path: Path):
    spec = importlib.util.spec_from_file_location(path.stem, path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def styles() -> dict:
    found = {"baseline": PUZZLE / "baseline.py", "reference": PUZZLE / "solution" / "workload.py"}
    found.update({p.stem: p for p in sorted((PUZZLE / "alternatives").glob("*.py"))})
    return {name: load(path) for name, path in found.items()}


def ms(fn) -> float:
    torch.cuda.synchronize()
    start = time.perf_counter()
    fn()
    torch.cuda.synchronize()
    return (time.perf_counter() - start) * 1e3


def cgroup_file(name: str) -> str:
    try:
        return Path("/sys/fs/cgroup", name).read_text().strip()
    except OSError:
        return "unreadable"


def throttled() -> dict[str, int]:
    """nr_throttled and throttled_usec of this cgroup, if cgroup v2 shows them."""
    lines = (line.split() for line in cgroup_file("cpu.stat").splitlines())
    return {k: int(v) for k, v in (pair for pair in lines if len(pair) == 2) if k.startswith(("nr_throttled", "throttled_usec"))}


def rates(batch: torch.Tensor) -> str:
    pinned = torch.empty_like(batch, pin_memory=True)
    on_gpu = torch.empty_like(batch, device="cuda")
    gb = batch.numel() * batch.element_size() / 1e9
    seen = {"pageable->pinned": statistics.median(ms(lambda: pinned.copy_(batch)) for _ in range(7)),
            "pageable->gpu": statistics.median(ms(lambda: on_gpu.copy_(batch)) for _ in range(7)),
            "pinned->gpu": statistics.median(ms(lambda: on_gpu.copy_(pinned, non_blocking=True)) for _ in range(7))}
    return "  ".join(f"{k} {gb / (v / 1e3):.1f} GB/s" for k, v in seen.items())


def sweep(calls: int, where: str) -> None:
    spec = load(PUZZLE / "spec.py")
    weights = spec.make_weights(0, "cuda")
    states = {name: (m, m.prepare(weights, "cuda")) for name, m in styles().items()}
    for threads in (torch.get_num_threads(), 1, 4, 8, 16):
        torch.set_num_threads(threads)
        before = throttled()
        print(f"[{where}] {threads} threads: {rates(spec.make_input(0, 'cuda')[0])}", flush=True)
        for name, (module, state) in states.items():
            for _ in range(2):
                module.forward(state, spec.make_input(1, "cuda"))
            times = []
            for i in range(calls):
                x = spec.make_input(2 + i, "cuda")
                times.append(ms(lambda: module.forward(state, x)))
            print(f"[{where}]   {name:16} median {statistics.median(times):7.2f} ms  min {min(times):7.2f}  "
                  f"max {max(times):7.2f}", flush=True)
        after = throttled()
        print(f"[{where}]   throttled meanwhile: {({k: after[k] - before.get(k, 0) for k in after})}", flush=True)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--calls", type=int, default=15)
    args = parser.parse_args()
    print(f"cpus {os.cpu_count()}, affinity {len(os.sched_getaffinity(0))}, torch threads {torch.get_num_threads()}, "
          f"cgroup cpu.max {cgroup_file('cpu.max')!r}")
    pid = os.fork()  # before CUDA is initialised, as the warm harness forks
    if pid == 0:
        sweep(args.calls, "forked")
        os._exit(0)
    os.waitpid(pid, 0)
    sweep(args.calls, "process")


if __name__ == "__main__":
    main()
