"""The call clock's loop three ways, on a puzzle's workloads in one process: what making each input only once the
call before it returned (issue 76) would do to the figures a grade reads.

    python benchmarks/loop_clocks.py puzzle1 baseline reference alternatives/NAME ... [--rounds 30] [--json]

Each round, on fresh seeds, in a fresh random order of (workload, clock), 6 calls back to back per clock:
- made before: every input of the loop made before its clock starts (the call clock graded before issue 76);
- windows out: each input made in the loop, once the call before returned, on a stream of its own; the window
  is left out of the clock: on the timed stream the span from its last call's end to the input's arrival,
  and where that stream was idle as the window opened, the whole device drained first (counted);
- from idle: each input made in the loop with the device drained before and after: every call timed alone,
  from an idle GPU, until the device drains (the call clock graded since: tutor.harness.gpu_clock; in "windows
  out", work a call left on another stream would run free in the next window);
- held each: each input made in the loop, then the call timed as the GPU clock times one (tutor.harness.gpu_clock:
  the GPU held while the host enqueues it, events around it, what ran past its end event beyond a sync's own cost
  added) and charged the
  longer of that GPU time and the host's time in the call: a loop whose host and GPU overlap perfectly.
Every clock flushes L2 before its first call, keeps each output as a grade does (tutor.harness.call_checks) and
checks the harness's dispatch table for the input's operators before each input, as a grade must once learner
code has run. Prints each workload's per-call median under each clock, and each workload's speed-up over the
first (median of per-round ratios), the tier the medians reach against the puzzle's call-clock bars over the
workloads timed here, and the tier puzzle.toml expects of it: a clock that moves a workload off its tier shows
there.
"""

from __future__ import annotations

import argparse
import json
import random
import statistics
import time

import torch

from tutor.catalog import get_puzzle
from tutor.harness.call_checks import Kept
from tutor.harness.checks import own_copy
from tutor.harness.dispatch_table import DispatchTable, entered
from tutor.harness.gpu_clock import GpuClock, after_floor_ms, settle
from tutor.harness.loading import load_module

CALLS = 6
CLOCKS = ("made before", "windows out", "from idle", "held each")
_sync = getattr(torch._C, "_cuda_synchronize", torch.cuda.synchronize)
_now = time.perf_counter_ns


def tensors_in(x):
    if isinstance(x, torch.Tensor):
        yield x
    elif isinstance(x, dict):
        for v in x.values():
            yield from tensors_in(v)
    elif isinstance(x, (list, tuple)):
        for v in x:
            yield from tensors_in(v)


class Bench:
    def __init__(self, puzzle_id: str, names: list[str]):
        puzzle = get_puzzle(puzzle_id)
        self.spec = load_module(puzzle.folder / "spec.py", "spec", ("make_weights", "make_input"))
        self.table = DispatchTable(entered(lambda: self.spec.make_input(0, "cuda")))
        weights = self.spec.make_weights(1, "cuda")
        self.workloads = {}
        for name in names:
            path = puzzle.workload_path(name) if name in puzzle.workloads else puzzle.solution_path(name)
            module = load_module(path, f"m_{name.replace('/', '_')}", ("prepare", "forward"))
            self.workloads[name] = (module.forward, module.prepare(own_copy(weights), "cuda"))
        l2 = getattr(torch.cuda.get_device_properties(0), "L2_cache_size", 50 * 2**20)
        self.flush = torch.empty(max(2 * l2, 64 * 2**20), dtype=torch.uint8, device="cuda")
        self.making = torch.cuda.Stream()
        from tutor.harness.hold import GpuHold
        self.clock = GpuClock(GpuHold())
        self.drain_ms = statistics.median(self._drain() for _ in range(31))
        warm = getattr(self.spec, "warmup_inputs", None)
        for name, (forward, state) in self.workloads.items():
            for x in (warm(7, "cuda") if warm else []) * 2 + [self.make(900 + i) for i in range(5)]:
                forward(state, x)
        _sync()

    @staticmethod
    def _drain() -> float:
        t = _now()
        _sync()
        return (_now() - t) / 1e6

    def make(self, seed: int):
        assert not self.table.changed()
        return self.spec.make_input(seed, "cuda")

    def made_before(self, name: str, seeds: list[int]) -> float:
        forward, state = self.workloads[name]
        inputs = [self.make(s) for s in seeds]
        kept = []
        self.flush.zero_()
        _sync()
        start = _now()
        for x in inputs:
            kept.append(Kept(forward(state, x)))
        _sync()
        return max(0.0, (_now() - start) / 1e6 - self.drain_ms) / len(seeds)

    def windows_out(self, name: str, seeds: list[int]) -> float:
        forward, state = self.workloads[name]
        timed = torch.cuda.current_stream()
        x, kept, spans, synced, ended = self.make(seeds[0]), [], [], 0, None
        self.flush.zero_()
        _sync()
        start = _now()
        for k, seed in enumerate(seeds):
            if k:
                if ended.query():  # the timed stream ran the call before: what else it left is waited out, counted
                    _sync()
                    synced += 1
                before, after, ready = (torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True),
                                        torch.cuda.Event())
                before.record()
                with torch.cuda.stream(self.making):
                    x = self.make(seed)
                    ready.record()
                timed.wait_event(ready)
                for t in tensors_in(x):
                    t.record_stream(timed)
                after.record()
                spans.append((before, after))
            kept.append(Kept(forward(state, x)))
            ended = torch.cuda.Event()
            ended.record()
        _sync()
        wall = (_now() - start) / 1e6
        out = sum(b.elapsed_time(a) for b, a in spans)
        return max(0.0, wall - self.drain_ms * (1 + synced) - out) / len(seeds)

    def from_idle(self, name: str, seeds: list[int]) -> float:
        forward, state = self.workloads[name]
        kept, total = [], 0.0
        for k, seed in enumerate(seeds):
            x = self.make(seed)
            if k == 0:  # as the harness does: L2 written over once the first input is made
                self.flush.zero_()
            _sync()
            start = _now()
            kept.append(Kept(forward(state, x)))
            _sync()
            total += max(0.0, (_now() - start) / 1e6 - self.drain_ms)
        return total / len(seeds)


    def held_each(self, name: str, seeds: list[int]) -> float:
        forward, state = self.workloads[name]
        if name not in self.clock.clocks:  # held or idle, and the hold's length, as a grade decides them
            probes = [self.make(s) for s in range(800, 807)]  # made first: the probes time the call's enqueue alone
            self.clock.calibrate(name, [lambda x=x: forward(state, x) for x in probes])
        clock, kept, calls = self.clock.clocks[name], [], []
        self.flush.zero_()
        for seed in seeds:
            x = self.make(seed)
            out, gpu_ms, host_ms, after_ms = self.clock._run(lambda: forward(state, x), clock.held, clock.hold_ms)
            kept.append(Kept(out))
            calls.append((gpu_ms, host_ms))
            clock.after_ms.append(after_ms)
        # Settled as a grade settles its GPU clock; every workload here is trusted, so the floor is read from all of
        # their calls so far, where a grade reads the ruler's.
        settle(self.clock.clocks, after_floor_ms(self.clock.clocks))
        return sum(max(gpu_ms + clock.charge_ms, host_ms) for gpu_ms, host_ms in calls) / len(seeds)


def expected_tier(puzzle, name: str) -> str:
    """The tier puzzle.toml expects of `name`: the reference's is the highest, an alternative's its own."""
    if name == "reference":
        return puzzle.tiers[-1].name
    return puzzle.alternatives.get(name.removeprefix("alternatives/"), "")


def tier_reached(puzzle, speedups: dict[str, float]) -> str:
    """The highest tier whose call-clock bars the median speed-ups over the workloads timed here all clear (a bar
    over a workload not timed here, or on the GPU clock, is not read; a grade reads the interval's lower bound, so
    a median near a bar is no verdict)."""
    reached = ""
    for name in dict.fromkeys(t.name for t in puzzle.tiers):
        bars = [t for t in puzzle.tiers if t.name == name and t.clock == "call" and t.vs in speedups]
        if bars and all(speedups[t.vs] >= t.min_speedup for t in bars):
            reached = name
        elif bars:
            break
    return reached


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("puzzle")
    parser.add_argument("names", nargs="+", help="workload names (the first is the comparator), reference, or "
                                                 "alternatives/NAME")
    parser.add_argument("--rounds", type=int, default=30)
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    bench = Bench(args.puzzle, args.names)
    clock_of = {"made before": bench.made_before, "windows out": bench.windows_out, "from idle": bench.from_idle,
                "held each": bench.held_each}
    ms = {(n, c): [] for n in args.names for c in CLOCKS}
    for _ in range(args.rounds):
        seeds = [random.randrange(2**62) for _ in range(CALLS)]
        pairs = list(ms)
        random.shuffle(pairs)
        for name, clock in pairs:
            ms[name, clock].append(clock_of[clock](name, seeds))
    first = args.names[0]
    puzzle = get_puzzle(args.puzzle)
    result = {"puzzle": args.puzzle, "gpu": torch.cuda.get_device_name(), "rounds": args.rounds, "calls": CALLS,
              "drain_ms": bench.drain_ms, "workloads": {}}
    for name in args.names:
        row = {}
        for clock in CLOCKS:
            ratios = [b / m for b, m in zip(ms[first, clock], ms[name, clock]) if m > 0]
            row[clock] = {"median_ms": statistics.median(ms[name, clock]), "speedup": statistics.median(ratios),
                          "tier": tier_reached(puzzle, {vs: statistics.median(
                              b / m for b, m in zip(ms[vs, clock], ms[name, clock]) if m > 0)
                              for vs in args.names})}
        row["expected"] = expected_tier(puzzle, name)
        result["workloads"][name] = row
        print(f"{args.puzzle} {name:34s} expected {row['expected'] or '-':6s} " + "  ".join(
            f"{c}: {row[c]['median_ms']:.4f} ms, {row[c]['speedup']:.3f}x {row[c]['tier'] or '-'}" for c in CLOCKS),
            flush=True)
    if args.json:
        print(json.dumps(result))


if __name__ == "__main__":
    main()
