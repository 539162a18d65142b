"""Puzzle 7's next scene, measured before it is built: results copied back to the host, by path and by torch's
CPU thread count, in a child forked after `import torch` (as the warm harness forks).

    PYTHONPATH=. python challenges/puzzle7/sweeps/d2h_paths.py [--mb 32] [--copies 8] [--repeats 7]

The first scene's fix needed a host memcpy into pinned memory whose speed swung 4-84 GB/s with the host's
threads and load (MEASUREMENTS.md). The way back needs none: the GPU can write a result straight into a
pinned buffer the workload hands out, the driver copies a pageable destination through its own staging.
Printed for each thread count (the process's default, then 1, 4 and 8), as GB/s, the median of `--repeats`
rounds of `--copies` results of `--mb` MB each (one result a request batch):
- `pageable`: `result.cpu()`, what a step that returns host tensors does today (a fresh pageable tensor);
- `pinned, waited`: a copy into a preallocated pinned buffer, `non_blocking=True`, then a sync a copy;
- `overlapped round, ms`: the same copies queued on a second stream behind a matmul a result (the first
  scene's stream pattern, backwards), the round timed whole, beside `matmuls alone, ms` and
  `waited round, ms`: overlap hides the copies when the first is near the second, not the sum;
- `pinned -> pageable`: the host memcpy a step would still need if its caller wanted pageable memory.
If the two pinned paths hold steady across thread counts and the pageable one stays several times slower,
the scene can be the way back. Nothing here grades.
"""

from __future__ import annotations

import argparse
import os
import statistics
import time

import torch


def timed_s(fn) -> float:
    torch.cuda.synchronize()
    start = time.perf_counter()
    fn()
    torch.cuda.synchronize()
    return time.perf_counter() - start


def paths(mb: int, copies: int, repeats: int) -> dict[str, float]:
    """GB/s of each path, the median round of `copies` results; the overlapped round's milliseconds."""
    n = mb * 2**20 // 4
    side = int(n**0.5)
    a = torch.randn(side, side, device="cuda")
    results = [torch.randn(n, device="cuda") for _ in range(copies)]
    pinned = [torch.empty(n, pin_memory=True) for _ in range(copies)]
    pageable = [torch.empty(n) for _ in range(copies)]
    copier = torch.cuda.Stream()

    def waited():
        for src, dst in zip(results, pinned):
            dst.copy_(src, non_blocking=True)
            torch.cuda.synchronize()

    def matmuls():
        for _ in results:
            a @ a

    def overlapped():
        for src, dst in zip(results, pinned):
            a @ a
            made = torch.cuda.Event()
            made.record()
            with torch.cuda.stream(copier):
                copier.wait_event(made)
                dst.copy_(src, non_blocking=True)
        copier.synchronize()

    gb = copies * n * 4 / 1e9
    rounds = {"pageable": lambda: [r.cpu() for r in results], "pinned, waited": waited,
              "pinned -> pageable": lambda: [d.copy_(s) for s, d in zip(pinned, pageable)]}
    seen = {name: gb / statistics.median(timed_s(fn) for _ in range(repeats)) for name, fn in rounds.items()}
    seen["overlapped round, ms"] = statistics.median(timed_s(overlapped) for _ in range(repeats)) * 1e3
    seen["matmuls alone, ms"] = statistics.median(timed_s(matmuls) for _ in range(repeats)) * 1e3
    seen["waited round, ms"] = gb / seen["pinned, waited"] * 1e3
    return seen


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--mb", type=int, default=32)
    parser.add_argument("--copies", type=int, default=8)
    parser.add_argument("--repeats", type=int, default=7)
    args = parser.parse_args()
    print(f"cpus {os.cpu_count()}, affinity {len(os.sched_getaffinity(0))}, torch threads {torch.get_num_threads()}")
    pid = os.fork()  # before CUDA is initialised, as the warm harness forks
    if pid == 0:
        for threads in dict.fromkeys((torch.get_num_threads(), 1, 4, 8)):
            torch.set_num_threads(threads)
            seen = paths(args.mb, args.copies, args.repeats)
            print(f"{threads:3} threads: " + "  ".join(f"{k} {v:.1f}" + ("" if k.endswith("ms") else " GB/s")
                                                     for k, v in seen.items()), flush=True)
        os._exit(0)
    os.waitpid(pid, 0)


if __name__ == "__main__":
    main()
