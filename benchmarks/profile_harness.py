"""Where a grade's harness process spends its time, function by function (cProfile).

    python benchmarks/profile_harness.py puzzle2 [--which reference|baseline|alternatives/NAME] [--top 30]
    python benchmarks/profile_harness.py puzzle1 --workers   (the two sides' worker processes instead)
    python benchmarks/profile_harness.py puzzle1 --calls     (a timed call's pieces, timed without a profiler)

Runs the grade's check request in this process (the same `tutor.harness` code the subprocess
runs), with the reference solution, the baseline or an alternative as `mine`, and prints each stage's seconds
and the functions with the most cumulative time. For finding what makes `grade` slow. The functions are the
coordinator's: the two sides (the puzzle's workloads, and `mine`) run in processes forked from it. With --workers,
each side's worker is profiled instead (tutor.harness.worker.PROFILE_ENV) and its functions printed by their own
time: where a round's asks go (a check of the harness's operators, an input's making, a sync). A worker profiled
runs the harness's watch of its own work unwatched (tutor.harness.foreign_code gives way to another profiler).

With --calls, no profiler runs (cProfile's cost a Python call would be much of a call's own cost): timers around the
pieces of the timed rounds, installed here before the sides fork (`CallTimers`), print what a call costs each side,
piece by piece: each ask's round trip as the coordinator saw it, its handling in the worker and the pipe between; in
a call of the call clock's loop, the input's making (the check of the harness's operators and the watch of that work
included), the workload's call, the keeping of its output, and the waits for the input and for the device's drain;
each check of the harness's operators and fair play's checks after a round; each side's start, piece by piece (what
the candidate's does beyond the ruler's: its dry runs of the harness's work, the tables read from them, the watch);
and the coordinator's own work a round (a workload's round, the round's checks, thawing and freezing the learner's
side). The harness's watch runs as in a grade.
"""

from __future__ import annotations

import argparse
import cProfile
import json
import os
import pstats
import shutil
import statistics
import sys
import tempfile
import time
from collections import defaultdict
from pathlib import Path

from tutor import actions
from tutor.catalog import get_puzzle
from tutor.harness import lockstep, processes, worker
from tutor.harness.__main__ import run
from tutor.harness.device import Device
from tutor.harness.worker import PROFILE_ENV
from tutor.workspace import scratch_workspace


class StageClock:
    """An event sink that keeps each stage's wall time instead of writing events."""

    def __init__(self) -> None:
        self.marks: list[tuple[str, float]] = []

    def stage(self, stage: str, detail: str = "") -> None:
        self.marks.append((f"{stage} {detail}".strip(), time.monotonic()))

    def progress(self, *_) -> None:
        pass

    def emit(self, *_args, **_fields) -> None:
        pass

    def close(self) -> None:  # a forked side forgets the sink; nothing to forget here
        pass


_ns = time.perf_counter_ns


class CallTimers:
    """Timers around the pieces of a grade's timed rounds: the coordinator's in this process, each worker's in the
    process forked from it, which writes its own to `folder` as it finishes. Wrappers, not a profiler: each costs
    two clock reads. None runs inside the harness's watched work (tutor.harness.foreign_code would refuse it as
    code of the workload's), nor after a side's last reply."""

    def __init__(self, folder: Path) -> None:
        self.folder, self.ns = folder, defaultdict(list)  # (side, piece) -> nanoseconds
        self._forward_ns = 0  # the last forward()'s, inside the call it is part of
        self._side = ""  # the side of the last side's timer: in a worker, its own (its first is its start)

    def install(self) -> None:
        self._wrap(lockstep.Side, "ask", lambda side, op, **_: (side.role, f"ask {op}: round trip"))
        self._wrap(lockstep, "time_round", lambda side, *_, **__: ("coordinator", f"a round of {side.role}'s"))
        self._wrap(lockstep, "every_call_checked", lambda *_: ("coordinator", "a round's checks"))
        self._wrap(processes, "thaw", lambda *_: ("coordinator", "thawing the learner's side"))
        self._wrap(processes, "freeze", lambda *_: ("coordinator", "freezing the learner's side"))
        self._wrap(worker, "answer", lambda w, message: (_role(w), f"ask {message['op']}: handled"))
        self._wrap(worker.Worker, "forward", lambda w, *_: (_role(w), "forward()"), keep_last=True)
        self._wrap(worker.Worker, "_verify", lambda w: (_role(w), "fair play's checks after a round (_verify)"))
        self._wrap(worker.Worker, "_own_operators", lambda w, _: (_role(w), "a check of the harness's operators"))
        # A side's start (its first ask builds the worker): what the candidate's start does beyond the ruler's.
        self._wrap(worker.Worker, "__init__", lambda w, request, names, candidate: (
            "candidate" if candidate else "ruler", "start: the worker, whole"))
        for name, piece in (("setup", "the device (its CUDA context, the clocks)"), ("Guard", "fair play's guard"),
                            ("entered", "a dry run of the harness's work (a function mode)"),
                            ("dispatched", "a dry run under torch's profiler"),
                            ("DispatchTable", "reading the operators' kernels"),
                            ("ForeignCode", "the watch of the harness's work")):
            self._wrap(worker, name, lambda *_, piece=piece, **__: (None, f"start: {piece}"))
        self._time_call_pieces()
        finish, timers = worker.Worker.finish, self

        def finished(w, *args, **kwargs):  # written before the reply: the learner's side may be killed after it
            result = finish(w, *args, **kwargs)
            (timers.folder / f"{_role(w)}-{os.getpid()}.json").write_text(json.dumps(
                {f"{side}\t{piece}": ns for (side, piece), ns in timers.ns.items() if side == _role(w)}))
            return result
        worker.Worker.finish = finished

    def _wrap(self, owner, name: str, key, keep_last: bool = False) -> None:
        inner, ns = getattr(owner, name), self.ns

        def timed(*args, **kwargs):
            side_piece, start = key(*args, **kwargs), _ns()  # before the call: answer() pops its message's op
            if side_piece[0] is None:  # the worker's side, from its worker's call before
                side_piece = (self._side, side_piece[1])
            elif side_piece[0] != "coordinator":
                self._side = side_piece[0]
            try:
                return inner(*args, **kwargs)
            finally:
                took = _ns() - start
                ns[side_piece].append(took)
                if keep_last:
                    self._forward_ns = took
        setattr(owner, name, timed)

    def _time_call_pieces(self) -> None:
        """A call of the call clock's loop (Device.call_ms): its input's making, the call (forward() and the keeping
        of its output) and the rest of it, the waits for the input and for the device to drain."""
        call_ms, ns, timers = Device.call_ms, self.ns, self

        def pieces(device, make, call, flush):
            role, took = timers._side, {}

            def made(flush_too):
                start = _ns()
                x = make(flush_too)
                took["make"] = _ns() - start
                return x

            def called(x):
                start = _ns()
                call(x)
                took["call"] = _ns() - start

            start = _ns()
            ms = call_ms(device, made, called, flush)
            whole = _ns() - start
            ns[role, "loop call: making its input"].append(took["make"])
            ns[role, "loop call: forward()"].append(timers._forward_ns)
            ns[role, "loop call: keeping its output"].append(took["call"] - timers._forward_ns)
            ns[role, "loop call: waits (input made, device drained)"].append(whole - took["make"] - took["call"])
            return ms
        Device.call_ms = pieces

    def report(self, timing_s: float) -> None:
        """Each side's pieces, then the coordinator's: count, median microseconds, total seconds."""
        for path in sorted(self.folder.glob("*.json")):
            for key, ns in json.loads(path.read_text()).items():
                self.ns[tuple(key.split("\t"))] += ns  # a side of several ranks: each rank's calls
        calls = sum(len(ns) for (side, piece), ns in self.ns.items()
                    if piece in ("ask warm_call: handled", "ask loop_call: handled", "ask gpu_call: handled"))
        print(f"\nthe timed rounds: {timing_s:.2f} s, {calls} calls ({1e3 * timing_s / max(calls, 1):.2f} ms a call)")
        print(f"  {'side':12} {'piece':52} {'count':>6} {'median us':>10} {'total s':>8}")
        for (side, piece), ns in sorted(self.ns.items()):
            print(f"  {side:12} {piece:52} {len(ns):6} {statistics.median(ns) / 1e3:10.1f} {sum(ns) / 1e9:8.3f}")
        print("  a loop call's ask beyond its pieces, median us: in the worker (its checks of the round), in the pipe")
        for side in ("ruler", "candidate"):
            handled = self.ns.get((side, "ask loop_call: handled"))
            trip = self.ns.get((side, "ask loop_call: round trip"))
            if handled and trip:  # a side's asks answer one at a time, in order: the i-th of each is one ask
                pieces = [sum(ns) for ns in zip(*(ns for (s, piece), ns in self.ns.items()
                                                 if s == side and piece.startswith("loop call:")))]
                beyond = [h - p for h, p in zip(handled, pieces, strict=True)]
                pipe = [t - h for t, h in zip(trip, handled, strict=True)]
                print(f"  {side:12} {statistics.median(beyond) / 1e3:10.1f} {statistics.median(pipe) / 1e3:10.1f}")


def _role(w) -> str:
    return "candidate" if w.candidate else "ruler"


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("puzzle")
    parser.add_argument("--which", default="reference", help="reference, baseline or alternatives/NAME")
    parser.add_argument("--top", type=int, default=30)
    parser.add_argument("--workers", action="store_true", help="profile the worker processes, not the coordinator")
    parser.add_argument("--calls", action="store_true", help="time a call's pieces on each side, with no profiler")
    args = parser.parse_args()
    puzzle = get_puzzle(args.puzzle)
    ws = scratch_workspace("infprof-profile-")
    if args.which != "baseline":
        shutil.copy2(puzzle.solution_path(args.which), ws.editable_path(puzzle, "workload.py"))
    request = actions.check_request(ws, puzzle, ["mine", *dict.fromkeys(t.vs for t in puzzle.tiers)])
    clock, profiler, folder = StageClock(), cProfile.Profile(), Path(tempfile.mkdtemp(prefix="infprof-workers-"))
    timers = CallTimers(folder) if args.calls else None
    if args.workers:
        os.environ[PROFILE_ENV] = str(folder)  # read by each worker forked from here
    elif timers:
        timers.install()
    start = time.monotonic()
    if not (args.workers or timers):
        profiler.enable()
    run(request, clock)
    profiler.disable()
    end = time.monotonic()
    print(f"{args.puzzle}, {args.which} as mine: {end - start:.2f} s in the harness")
    stages = {name: until - at for (name, at), (_, until) in zip(clock.marks, [*clock.marks[1:], ("end", end)])}
    for name, seconds in stages.items():
        print(f"  {name:40} {seconds:7.2f} s")
    if timers:
        timers.report(next(seconds for name, seconds in stages.items() if name.startswith("timing")))
    elif not args.workers:
        pstats.Stats(profiler).sort_stats("cumulative").print_stats(args.top)
    for stats in sorted(folder.glob("*.prof")):  # the candidate's, then the ruler's
        print(f"\n{stats.stem}: by own time, then by cumulative time")
        pstats.Stats(str(stats)).sort_stats("tottime").print_stats(args.top)
        pstats.Stats(str(stats)).sort_stats("cumulative").print_stats(args.top)
    shutil.rmtree(folder, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
