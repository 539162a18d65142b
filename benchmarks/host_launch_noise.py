"""Is a CUDA launch's host cost a property of the process, or of the CPU it runs on?

    python benchmarks/host_launch_noise.py [--processes 8] [--passes 3]

Grades of the same code on the H100 fall into fast and slow processes: in the slow ones every
launch costs the host more, so host-bound workloads (eager bf16: 16 launches) lose 40% and graph
replays 10%. This times, in each setting, pure Python work (the CPU's own speed) and the host
cost of a kernel launch from an idle GPU (enqueue only, median of many):
  - pinned: one process moves its thread over every CPU it may use, several interleaved passes;
  - processes: fresh unpinned processes, each saying which CPUs it ran on.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import time

LAUNCHES = 16
SAMPLES = 101


def current_cpu() -> int:
    return int(open("/proc/self/stat").read().rsplit(")", 1)[1].split()[36])


def python_us() -> float:
    def work():
        s = 0
        for i in range(20000):
            s += i
        return s
    times = []
    for _ in range(21):
        t0 = time.perf_counter_ns()
        work()
        times.append((time.perf_counter_ns() - t0) / 1e3)
    return statistics.median(times)


def launch_us(torch, x) -> float:
    times = []
    for _ in range(SAMPLES):
        torch.cuda.synchronize()
        t0 = time.perf_counter_ns()
        for _ in range(LAUNCHES):
            x.add_(1)
        times.append((time.perf_counter_ns() - t0) / 1e3 / LAUNCHES)
    torch.cuda.synchronize()
    return statistics.median(times)


def worker(pinned_passes: int) -> None:
    import torch
    x = torch.zeros(1024, device="cuda")
    launch_us(torch, x)  # warm: the first launches load modules
    if pinned_passes:
        cpus = sorted(os.sched_getaffinity(0))
        rows = {cpu: [] for cpu in cpus}
        for _ in range(pinned_passes):
            for cpu in cpus:
                os.sched_setaffinity(0, {cpu})
                rows[cpu].append((python_us(), launch_us(torch, x)))
        print(json.dumps({str(c): r for c, r in rows.items()}))
        return
    seen = set()
    samples = []
    for _ in range(5):
        seen.add(current_cpu())
        samples.append((python_us(), launch_us(torch, x)))
        seen.add(current_cpu())
    print(json.dumps({"cpus": sorted(seen), "python_us": statistics.median(s[0] for s in samples),
                      "launch_us": statistics.median(s[1] for s in samples)}))


def spawn(*args: str) -> dict:
    out = subprocess.run([sys.executable, __file__, "--worker", *args], capture_output=True, text=True, check=True)
    return json.loads(out.stdout.strip().splitlines()[-1])


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--processes", type=int, default=8)
    parser.add_argument("--passes", type=int, default=3)
    parser.add_argument("--worker", action="store_true")
    parser.add_argument("--pinned", type=int, default=0)
    args = parser.parse_args()
    if args.worker:
        worker(args.pinned)
        return 0
    print(f"pinned: one process, every CPU in turn, {args.passes} passes (median python µs, launch µs per pass)")
    for cpu, rows in spawn("--pinned", str(args.passes)).items():
        print(f"  cpu {cpu:>3}: python " + " ".join(f"{p:7.1f}" for p, _ in rows)
              + "   launch " + " ".join(f"{lu:5.2f}" for _, lu in rows))
    print(f"processes: {args.processes} fresh unpinned processes")
    for i in range(args.processes):
        r = spawn()
        print(f"  process {i + 1}: python {r['python_us']:7.1f} µs  launch {r['launch_us']:5.2f} µs  on cpus {r['cpus']}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
