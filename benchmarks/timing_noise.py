"""Where does a timed sample's noise come from: the host, the GPU, or the L2 flush?

    python benchmarks/timing_noise.py puzzle3 [--rounds 150] [--json out.json]

Loads a puzzle's workloads and its reference solution (as `mine`) in one process, as the
harness does, and times them under several methods, interleaved at random in every round
so each method sees the same machine:
  - events:        the grader's method: write-flush of the L2, idle GPU, CUDA events around the call;
  - events_read:   the L2 flushed by reading a buffer (clean lines) instead of writing one (dirty lines);
  - queued:        the GPU held by a one-thread spin (torch.cuda._sleep) while the host enqueues the
                   call, so the events time the GPU's work alone; the host's enqueue time beside it;
  - queued_all:    the same with tutor.harness.hold, which fills every SM (side streams wait too).
First, a probe: work launched on a side stream that never waits for the timed stream, under each
hold: does it hide inside the hold (gap 0), or run after it where a device-wide sync sees it?
Prints each method's spread (IQR / median, p5-p95) per workload and the speed-up of `mine`
by two estimators (median of per-round ratios; ratio of medians) with bootstrap errors.
"""

from __future__ import annotations

import argparse
import json
import random
import statistics
import sys
import time
from pathlib import Path

import torch

from tutor.catalog import get_puzzle
from tutor.harness.device import Device
from tutor.harness.hold import GpuHold
from tutor.harness.loading import load_module
from tutor.harness.worker import share_autotuning

METHODS = ("events", "events_read", "queued", "queued_all")
BOOTSTRAP = 300


def load_workloads(puzzle) -> tuple[object, dict, dict]:
    spec = load_module(puzzle.folder / "spec.py", "spec", ("make_weights", "make_input"))
    paths = {name: puzzle.workload_path(name) for name in puzzle.workloads}
    paths["mine"] = puzzle.solution_path()
    modules, states = {}, {}
    for name, path in paths.items():
        modules[name] = load_module(path, name, ("prepare", "forward"))
        states[name] = modules[name].prepare(spec.make_weights(1234, "cuda"), "cuda")
    return spec, {n: m.forward for n, m in modules.items()}, states


class Methods:
    """The timing methods, sharing one flush buffer and one spin-kernel calibration."""

    def __init__(self, device: Device):
        self.device = device
        self.flush = device._flush
        self.cycles_per_us = self._calibrate_sleep()
        self.sleep_us: dict[str, float] = {}
        self.hold = GpuHold()

    def _calibrate_sleep(self) -> float:
        start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        torch.cuda._sleep(1_000_000)
        start.record()
        torch.cuda._sleep(10_000_000)
        end.record()
        torch.cuda.synchronize()
        return 10_000_000 / (start.elapsed_time(end) * 1000)

    def events(self, fn, flush_by_read=False) -> tuple[float, float]:
        if flush_by_read:
            self.flush.sum(dtype=torch.int64)
        else:
            self.flush.zero_()
        torch.cuda.synchronize()
        start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        t0 = time.perf_counter_ns()
        start.record()
        fn()
        end.record()
        host_us = (time.perf_counter_ns() - t0) / 1e3
        torch.cuda.synchronize()
        return start.elapsed_time(end), host_us

    def queued(self, fn, name: str, whole_gpu: bool = False) -> tuple[float, float, float]:
        """GPU ms, host enqueue µs, and µs the device stayed busy after the timed stream's end event."""
        self.flush.zero_()
        torch.cuda.synchronize()
        start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        us = self.sleep_us.get(name, 2000)
        if whole_gpu:
            self.hold.hold_ms(us / 1e3)
        else:
            torch.cuda._sleep(int(us * self.cycles_per_us))
        t0 = time.perf_counter_ns()
        start.record()
        fn()
        end.record()
        host_us = (time.perf_counter_ns() - t0) / 1e3
        end.synchronize()
        t1 = time.perf_counter_ns()
        torch.cuda.synchronize()
        return start.elapsed_time(end), host_us, (time.perf_counter_ns() - t1) / 1e3


def side_stream_probe(methods: Methods) -> None:
    """~1 ms of matmuls on a side stream that never waits for the timed stream, nothing on the timed one."""
    a = torch.randn(4096, 4096, device="cuda", dtype=torch.bfloat16)
    side = torch.cuda.Stream()

    def cheat():
        with torch.cuda.stream(side):
            for _ in range(8):
                a @ a

    methods.sleep_us["probe"] = 3000
    for whole in (False, True):
        rows = [methods.queued(cheat, "probe", whole_gpu=whole) for _ in range(5)]
        gpu, host, gap = (statistics.median(r[i] for r in rows) for i in range(3))
        print(f"probe, {'whole-GPU hold' if whole else 'one-thread sleep'}: timed stream {gpu * 1e3:.1f} µs, "
              f"device busy {gap:.1f} µs after its end event")


def run(puzzle_id: str, rounds: int) -> dict:
    puzzle = get_puzzle(puzzle_id)
    share_autotuning()
    device = Device("cuda")
    spec, forwards, states = load_workloads(puzzle)
    names = list(forwards)
    methods = Methods(device)
    side_stream_probe(methods)
    x = spec.make_input(7, "cuda")
    for name in names:  # warm-up, and each workload's host enqueue time to size its spin
        hosts = []
        for _ in range(10):
            _, host_us = methods.events(lambda: forwards[name](states[name], x))
            hosts.append(host_us)
        methods.sleep_us[name] = 3 * statistics.median(hosts) + 200
    samples = {m: {n: [] for n in names} for m in METHODS}
    host = {m: {n: [] for n in names} for m in METHODS}
    order = random.SystemRandom()
    for r in range(rounds):
        x = spec.make_input(1000 + r, "cuda")
        pairs = [(m, n) for m in METHODS for n in names]
        order.shuffle(pairs)
        for method, name in pairs:
            def call():
                return forwards[name](states[name], x)
            if method.startswith("queued"):
                ms, host_us, _ = methods.queued(call, name, whole_gpu=method == "queued_all")
            else:
                ms, host_us = methods.events(call, flush_by_read=method == "events_read")
            samples[method][name].append(ms)
            host[method][name].append(host_us)
    late = {n: sum(h > methods.sleep_us[n] for h in host["queued_all"][n]) for n in names}
    return {"puzzle": puzzle_id, "samples_ms": samples, "host_us": host, "sleep_us": methods.sleep_us,
            "queued_late": late, "tiers": [(t.name, t.vs, t.min_speedup) for t in puzzle.tiers]}


def quantile(xs: list[float], q: float) -> float:
    s = sorted(xs)
    return s[round(q * (len(s) - 1))]


def bootstrap_se(fn, a: list[float], b: list[float], rng: random.Random) -> float:
    n = len(a)
    stats = []
    for _ in range(BOOTSTRAP):
        idx = [rng.randrange(n) for _ in range(n)]
        stats.append(fn([a[i] for i in idx], [b[i] for i in idx]))
    return statistics.stdev(stats)


def median_of_ratios(base: list[float], mine: list[float]) -> float:
    return statistics.median(b / m for b, m in zip(base, mine))


def ratio_of_medians(base: list[float], mine: list[float]) -> float:
    return statistics.median(base) / statistics.median(mine)


def report(result: dict) -> None:
    rng = random.Random(0)
    print(f"{result['puzzle']}: per method, median µs [IQR/median, p5-p95]; queued: host enqueue µs")
    for method, per in result["samples_ms"].items():
        print(f"  {method}")
        for name, ms in per.items():
            mid = statistics.median(ms)
            iqr = (quantile(ms, 0.75) - quantile(ms, 0.25)) / mid
            line = (f"    {name:14} {mid * 1e3:8.1f}  [{iqr:6.1%}, {quantile(ms, 0.05) * 1e3:7.1f}-"
                    f"{quantile(ms, 0.95) * 1e3:7.1f}]  host {statistics.median(result['host_us'][method][name]):7.1f}")
            if method.startswith("queued"):
                line += f"  spin {result['sleep_us'][name]:.0f} µs, host outran it {result['queued_late'][name]}x"
            print(line)
        mine = per["mine"]
        for vs in sorted({vs for _, vs, _ in result["tiers"]}):
            mor = median_of_ratios(per[vs], mine)
            rom = ratio_of_medians(per[vs], mine)
            if method.startswith("queued"):
                call_us = {n: [max(ms * 1e3, h) for ms, h in zip(per[n], result["host_us"][method][n])] for n in (vs, "mine")}
                print(f"    mine vs {vs:14} max(GPU, host enqueue): ratio of medians "
                      f"{ratio_of_medians(call_us[vs], call_us['mine']):6.3f}")
            print(f"    mine vs {vs:14} median of ratios {mor:6.3f} (SE {bootstrap_se(median_of_ratios, per[vs], mine, rng) / mor:5.1%})"
                  f"   ratio of medians {rom:6.3f} (SE {bootstrap_se(ratio_of_medians, per[vs], mine, rng) / rom:5.1%})")


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("puzzle")
    parser.add_argument("--rounds", type=int, default=150)
    parser.add_argument("--json", type=Path)
    args = parser.parse_args()
    result = run(args.puzzle, args.rounds)
    report(result)
    if args.json:
        args.json.write_text(json.dumps(result))
    return 0


if __name__ == "__main__":
    sys.exit(main())
