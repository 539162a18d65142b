"""A grade in two processes timed in lockstep: the comparators' ruler and the learner's candidate.

The coordinator (this process) imports torch but never touches the GPU, then forks:
- the ruler loads the oracle and the comparators, prepares them and finishes their lazy work
  (compiles, graph captures, autotuning) before the candidate loads any learner code, and never
  loads any itself: no flag, config, library table or environment variable the learner sets can
  reach a comparator;
- the candidate loads the learner's workload alone, so the memory it reports is the memory of the
  code that was timed, measured in the process that was timed.
Correctness and timing then interleave the two, a fresh random order and a fresh input each
round. While the ruler works the candidate's side is frozen (tutor.harness.processes): none of its
threads or processes run, and before each comparator call the ruler waits out any GPU work it left
queued (a wait that never ends is a violation). Outputs come back as host tensors and are compared here.
"""

from __future__ import annotations

import os
import random
import secrets
import signal
import time
from contextlib import contextmanager, nullcontext, suppress
from dataclasses import dataclass
from multiprocessing.connection import Connection

from tutor.harness import call_checks, gpu_environment, processes, shards, wire
from tutor.harness.checks import compare
from tutor.harness.events import EventSink
from tutor.harness.loading import HarnessFailure
from tutor.harness.process_memory import ProcessMemory
from tutor.harness.ranks import slowest
from tutor.protocol import WHO, death_words

_order = random.SystemRandom()
# How many calls make one sample of the call clock, drawn each round: on CUDA, where a call is
# milliseconds or less, and on CPU (one thread, calls of tens of milliseconds).
LOOP_CALLS = {"cuda": (4, 8), "cpu": (3, 5)}  # CPU: a median of 3-5 calls a round (Device.loop_sample)
DEATH_WAIT_S = 2.0  # how long a worker that hung up is given to exit, for the message


@dataclass
class Side:
    """One worker process, as the coordinator sees it."""

    role: str
    pid: int
    conn: Connection
    names: list[str]

    def ask(self, op: str, **fields) -> dict:
        try:
            wire.send(self.conn, {"op": op, **fields}, op=op)
            reply = wire.recv(self.conn)
        except (EOFError, OSError, ValueError) as e:
            raise HarnessFailure("crashed", f"the {self.role} process {self._death()}", where=self.role) from e
        if "error" in reply:
            error = reply["error"]
            raise HarnessFailure(error["kind"], error["message"], error.get("where", self.role), error.get("tb", ""))
        return reply

    @property
    def pids(self) -> list[int]:
        return [self.pid]

    def thawed(self):
        """A stretch of asks (a round of one workload, a replay's steps): the ruler is never frozen."""
        return nullcontext()

    def close(self) -> None:
        self.conn.close()

    def _death(self) -> str:
        """How the worker ended; it may still be alive if learner code closed its pipe."""
        deadline = time.monotonic() + DEATH_WAIT_S
        try:
            while (ended := os.waitpid(self.pid, os.WNOHANG))[0] == 0 and time.monotonic() < deadline:
                time.sleep(0.01)
        except ChildProcessError:
            return "died"
        pid, status = ended
        if pid == 0:
            return "stopped answering the harness (its pipe was closed)"
        if os.WIFSIGNALED(status):
            return death_words(signal.Signals(os.WTERMSIG(status)).name)
        return f"exited with code {os.WEXITSTATUS(status)} before it answered"


class FrozenBetweenAsks:
    """A learner's side (one process or a rank group): thawed only while it is asked something, frozen the rest of
    the time. Needs `pid`, `trusted` (the ruler's processes: never frozen) and `held`."""

    def ask(self, op: str, **fields) -> dict:
        if self.held:
            return super().ask(op, **fields)
        processes.thaw(self.pid, self.trusted)
        try:
            return super().ask(op, **fields)
        finally:
            processes.freeze(self.pid, self.trusted)

    @contextmanager
    def thawed(self):
        """Thawed once for many asks (a round of one workload, a serving replay's steps), so no ask pays for a thaw
        and a freeze; the ruler is idle meanwhile. Frozen again after."""
        processes.thaw(self.pid, self.trusted)
        self.held = True
        try:
            yield
        finally:
            self.held = False
            processes.freeze(self.pid, self.trusted)


@dataclass
class Candidate(FrozenBetweenAsks, Side):
    """The learner's side: one process."""

    trusted: frozenset[int] = frozenset()  # the ruler: never frozen
    held: bool = False  # thawed for a stretch of asks (thawed())


class RankedSide:
    """A side of a multi-GPU grade: one worker a rank (tutor.harness.ranks), asked together, answering as one.

    A call lasts until its slowest rank is done, so samples merge by the slowest rank; every rank's output is
    checked, stacked rank by rank (tutor.harness.shards); a GPU left busy by any rank counts.
    """

    def __init__(self, role: str, group, names: list[str]):
        self.role, self.group, self.names = role, group, names

    @property
    def pid(self) -> int:
        return self.group.pids[0]

    @property
    def pids(self) -> list[int]:
        return list(self.group.pids)

    def ask(self, op: str, **fields) -> dict:
        # Lined up before each timed ask, so a rank's time holds its own work and its collectives' waits.
        return merged(op, self.group.ask(op, aligned=op in TIMED_OPS, **fields))

    def thawed(self):
        return nullcontext()

    def close(self) -> None:
        self.group.stop()


class RankedCandidate(FrozenBetweenAsks, RankedSide):
    """The learner's ranks. One thaw or freeze of rank 0 reaches every rank: processes.learner_side takes each
    untrusted child of the coordinator (every learner rank; the ruler's are trusted) and all they started."""

    def __init__(self, role: str, group, names: list[str], trusted: frozenset[int]):
        super().__init__(role, group, names)
        self.trusted, self.held = trusted, False


# The asks that time calls (tutor.harness.worker.Worker.loop_call and gpu_call).
TIMED_OPS = ("loop_call", "gpu_call")
RANKS_TIMING_NOTE = ("one call's time across GPUs is the slowest rank's; no GPU time is reported, since a "
                     "collective's kernel on one GPU also waits for the other ranks")


def merged(op: str, replies: list[dict]) -> dict:
    """The ranks' replies to one operation as one worker's."""
    first = replies[0]
    if op == "run":
        return {**first, "out": shards.joined([r["out"] for r in replies])}
    if op == "sampled":
        counts = {len(r["samples"]) for r in replies}
        if len(counts) > 1:  # the same round on every rank: a rank that returned early is a different round
            problem = {"problem": f"the ranks made {sorted(counts)} calls in one round"}
            return {"samples": [problem] * max(counts), "whole": problem}
        wholes = [r["whole"] for r in replies]
        return {"samples": [shards.joined(list(outs)) for outs in zip(*(r["samples"] for r in replies))],
                "whole": None if None in wholes else shards.joined(wholes)}
    if op == "warm_call":
        waited = [r["waited_ms"] for r in replies]
        return {**first, "waited_ms": -1.0 if min(waited) < 0 else max(waited)}
    if op != "finish":
        return first
    result = dict(first)
    result["samples_ms"] = {name: slowest([r["samples_ms"][name] for r in replies]) for name in first["samples_ms"]}
    # No rank's GPU clock is the call's: an NCCL kernel's time on one GPU includes its wait for the other ranks
    # (2 x H200, puzzle13's reference: held GPU medians of 0.08 to 0.43 ms a grade, one of 2.6 ms, for calls of
    # 0.17 ms). The call clock alone, then, and the verdict says why.
    result["gpu_samples_ms"], result["clocks"] = {}, {}
    result["timing_note"] = "; ".join(filter(None, [first.get("timing_note", ""), RANKS_TIMING_NOTE]))
    result["host_timed"] = sorted({name for r in replies for name in r["host_timed"]})
    if "violations" in first:
        result["violations"] = list(dict.fromkeys(v for r in replies for v in r["violations"]))
    if "rank_kept" in first:  # what each rank kept against its shard (tutor.harness.shards)
        result["rank_kept"] = [r["rank_kept"] for r in replies]
    return result


def start(request: dict, sink: EventSink) -> tuple[Side | RankedSide, Candidate | RankedCandidate]:
    """Fork the ruler and the candidate (a process each, or a rank group each); neither has loaded anything yet."""
    processes.become_subreaper()
    if request.get("ranks", 1) > 1:
        ruler, learner = _fork_ranked(request, sink, ruler_names(request))
    else:
        ruler, learner = _fork(request, sink, ruler_names(request))
    hold_learner(learner)
    return ruler, learner


def ruler_names(request: dict) -> list[str]:
    """What the ruler loads: the oracle always (the checks compare with the ruler's copy, even when it is also the
    candidate), and every timed workload but the candidate."""
    return list(dict.fromkeys([request["oracle"], *(n for n in request["time"] if n != request["candidate"])]))


def hold_learner(learner: Candidate | RankedCandidate) -> None:
    """The learner's side frozen until it is asked something, and ended with this process when the tutor stops the
    run (time limit, cancel). One call reaches every process of it, each of its ranks included
    (processes.learner_side)."""
    processes.freeze(learner.pid, learner.trusted)

    def stopped(signum, frame):
        processes.kill_all(learner.pid, learner.trusted)
        os._exit(128 + signum)

    signal.signal(signal.SIGTERM, stopped)


def _fork(request: dict, sink: EventSink, names: list[str]) -> tuple[Side, Candidate]:
    ruler = _fork_ruler(request, sink, names)
    return ruler, _fork_candidate(request, sink, ruler)


def _worker(request: dict, sink: EventSink, names: list[str], who: str | None, threads: int = 0):
    from tutor.harness.worker import serve

    def body(conn: Connection) -> None:
        sink.close()  # only the coordinator speaks to the tutor
        if threads:  # forked from the keeper, which runs one thread (KeptRuler): torch's own count again
            import torch
            torch.set_num_threads(threads)
        serve(conn, request, names, who)
    return body


def _fork_ruler(request: dict, sink: EventSink, names: list[str], threads: int = 0) -> Side:
    return Side("ruler", *processes.fork_worker(_worker(request, sink, names, None, threads)), names)


def _fork_candidate(request: dict, sink: EventSink, ruler: Side, threads: int = 0) -> Candidate:
    candidate = request["candidate"]
    return Candidate("candidate", *processes.fork_worker(_worker(request, sink, [candidate], candidate, threads)),
                     [candidate], trusted=frozenset({ruler.pid}))


def _fork_ranked(request: dict, sink: EventSink, names: list[str]) -> tuple[RankedSide, RankedCandidate]:
    """A multi-GPU grade: each side a rank group, the ruler's first."""
    from tutor.harness import ranks
    from tutor.harness.worker import rank_handler

    world, candidate = request["ranks"], request["candidate"]
    backend = "nccl" if request["device"] == "cuda" else "gloo"
    quiet = lambda rank: sink.close()  # noqa: E731 - only the coordinator speaks to the tutor
    ruler = RankedSide("ruler", ranks.start(world, rank_handler(request, names, None), backend, quiet), names)
    return ruler, RankedCandidate("candidate", ranks.start(world, rank_handler(request, [candidate], candidate),
                                                           backend, quiet), [candidate], trusted=frozenset(ruler.pids))


def check_and_time(request: dict, sink: EventSink) -> dict:
    return with_sides(request, sink, _check_and_time)


class KeptRuler:
    """A ruler kept between the quick checks of one watch session (tutor.harness.keeper): its comparators
    prepared, compiled and warm once, each check's candidate a fresh process forked beside it. Kept only while
    the request asks for the same comparators; a grade never keeps one (a fresh ruler every grade)."""

    def __init__(self, threads: int) -> None:
        """`threads`: torch's intra-op thread count for the processes forked from here. The keeper itself compares
        outputs on one thread: a thread pool it started (OpenMP's) would not survive into a forked child, whose
        first parallel op then waits forever (puzzle1's weights, on an H200 without OMP_NUM_THREADS)."""
        self.key, self.ruler, self.seed, self.threads = None, None, 0, threads

    @staticmethod
    def key_of(request: dict) -> str:
        """What the ruler was made from: the request less what changes from check to check, and each
        comparator file's and the spec's last change."""
        import json

        ruler_files = [request["spec"], *(path for name, path in request["workloads"].items()
                                          if name != request["candidate"])]
        changed = {path: os.stat(path).st_mtime_ns for path in ruler_files if os.path.exists(path)}
        same = {k: v for k, v in request.items() if k not in ("seed", "keeper")}
        return json.dumps([same, changed], sort_keys=True)

    def close(self) -> None:
        """End the ruler (its process and anything it started)."""
        if self.ruler is not None:
            self.ruler.close()
            processes.kill_tree(self.ruler.pid)
            with suppress(ChildProcessError):
                os.waitpid(self.ruler.pid, 0)
        self.key, self.ruler = None, None


def check_with_kept_ruler(request: dict, sink: EventSink, kept: KeptRuler) -> dict:
    """A check against `kept`'s ruler, made now if it holds none or other comparators; the candidate forked
    afresh. The weights come from the request's seed: the kept ruler's, so both sides hold the same ones."""
    key = kept.key_of(request)
    fresh = kept.ruler is None or kept.key != key
    if fresh:
        kept.close()
        processes.become_subreaper()
        kept.ruler = _fork_ruler(request, sink, ruler_names(request), kept.threads)
        kept.key, kept.seed = key, request["seed"]
    request = {**request, "seed": kept.seed}
    learner = _fork_candidate(request, sink, kept.ruler, kept.threads)
    hold_learner(learner)  # a stop ends the keeper too: its process group is the run's
    try:
        return _check_and_time(request, sink, kept.ruler, learner, ruler_ready=not fresh, keep_ruler=True)
    except BaseException:
        kept.close()  # a ruler that saw a check fail is not trusted with the next one
        raise
    finally:
        processes.kill_all(learner.pid, learner.trusted)
        learner.close()


def with_sides(request: dict, sink: EventSink, body) -> dict:
    """`body(request, sink, ruler, learner)` with both sides forked; the learner's side killed after, come what may."""
    ruler, learner = start(request, sink)
    try:
        return body(request, sink, ruler, learner)
    finally:
        processes.kill_all(learner.pid, learner.trusted)
        ruler.close()


def _check_and_time(request: dict, sink: EventSink, ruler: Side | RankedSide,
                    learner: Candidate | RankedCandidate, ruler_ready: bool = False, keep_ruler: bool = False) -> dict:
    """`ruler_ready`: a kept ruler, its comparators prepared and warm from an earlier check; `keep_ruler`: it stays
    for the next check (KeptRuler)."""
    names, candidate, oracle = request["time"], request["candidate"], request["oracle"]
    sides = {name: (learner if name == candidate else ruler) for name in [*names, oracle]}

    # The ruler first, all the way through its lazy work, while no learner code has loaded.
    setting_up = "a process, its CUDA context and clocks" if request["device"] == "cuda" else "a process"
    observed = None
    if ruler_ready:
        sink.stage("preparing", f"{WHO[ruler.role]}: kept from the last check")
        ruler.ask("rewind")
        ruler.ask("calibrate")
    for side in (learner,) if ruler_ready else (ruler, learner):
        sink.stage("preparing", f"{WHO[side.role]}: {setting_up}")
        side.ask("set_up")
        for name in side.names:
            sink.stage("preparing", name)
            side.ask("prepare", name=name)
        prepared = side.ask("prepared")
        warm_inputs = prepared["warm_inputs"]
        if side is ruler and prepared.get("memory_budget") and request.get("ranks", 1) == 1:
            # What each side's process holds, as NVML counts it from here between its calls (the budget's check).
            observed = ProcessMemory(uuid=prepared["gpu_uuid"])
        rounds = max(request["timing"]["warmup"], warm_inputs)
        sink.stage("warmup", f"{WHO[side.role]}: compiling and warming up")
        for i in range(rounds):
            side.ask("warm_up", index=i)
            if observed:
                observed.observe(side.role, side.pids)
            sink.progress("warmup", i + 1, rounds)
        side.ask("calibrate")

    sink.stage("checking", f"{candidate} against {oracle}")
    checks = []
    for _ in range(request["correctness"]["checks"]):
        seed = secrets.randbelow(2**62)
        checks.append(judged(request, ruler, seed, learner.ask("run", name=candidate, seed=seed)["out"],
                             ruler.ask("run", name=oracle, seed=seed)["out"]))

    rounds = request["timing"]["rounds"]
    # A quick check may stop early: after `min_rounds`, once `budget_s` of timing is spent.
    budget_s, least = request["timing"].get("budget_s"), request["timing"].get("min_rounds", rounds)
    # A quick check's loops may be shorter (tutor.quick_check): fewer calls a round, each still checked.
    loop_calls = tuple(request["timing"].get("loop_calls") or LOOP_CALLS[request["device"]])
    timed_checks, stalled, cuda = [], [], request["device"] == "cuda"
    before = gpu_environment.snapshot() if cuda else {}
    sink.stage("timing", f"{rounds} interleaved rounds")
    started = time.monotonic()
    for r in range(rounds):
        if budget_s is not None and r >= least and time.monotonic() - started > budget_s:
            break
        order = names[:]
        _order.shuffle(order)
        # Fresh inputs every round, drawn now: no output can be memoised per input. The first feeds the untimed
        # warm call, the rest the call clock's loop, and on CUDA the last the GPU clock's (time_round).
        calls = 1 + _order.randint(*loop_calls) + cuda
        seeds = [secrets.randbelow(2**62) for _ in range(calls)]
        for name in order:
            waited = time_round(sides[name], name, seeds, keep=name in (candidate, oracle), cuda=cuda)
            if observed:
                observed.observe(sides[name].role, sides[name].pids)
            if waited < 0:
                stalled.append(name)
        timed_checks += every_call_checked(request, seeds, learner, ruler)
        sink.progress("timing", r + 1, rounds)

    after = gpu_environment.snapshot() if cuda else {}
    theirs, mine = finished(ruler, learner, keep_ruler)
    result = merge(checks, timed_checks, theirs, mine, stalled)
    most = observed.report() if observed else {}
    if most:
        result["memory"]["observed_bytes"] = {"mine": most.get(learner.role), "theirs": most.get(ruler.role)}
    if before or after:
        result["environment"] = {"before": before, "after": after, "summary": gpu_environment.summary(before),
                                 "concerns": gpu_environment.concerns(before, after, {*ruler.pids, *learner.pids})}
    return result


def finished(ruler, learner, keep_ruler: bool) -> tuple[dict, dict]:
    """Both sides' last reports, the ruler's first: the candidate's GPU clock is settled against the floor the ruler
    read after its own calls' end events (tutor.harness.gpu_clock.after_floor_ms), a sync's cost on this host in this
    grade, never against one read from calls of learner code."""
    theirs = ruler.ask("finish", keep=keep_ruler)
    return theirs, learner.ask("finish", after_floor_ms=theirs.get("after_floor_ms", 0.0))


def time_round(side, name: str, seeds: list[int], keep: bool, cuda: bool) -> float:
    """One round of `name` on the inputs `seeds` make: the untimed warm call, the call clock's loop, and on CUDA the
    GPU clock's call (tutor.harness.worker.Worker). Each call is an ask of its own, with its own seed, sent once the
    one before returned: while a call runs, no later call's seed exists in the workload's process. Thawed for the
    round, so that the warm call's warmth reaches the loop (a worker keeps its core busy between asks:
    worker.AWAKE_S); the ruler is idle meanwhile. The milliseconds a comparator waited for the GPU to be quiet (-1: it
    never was)."""
    with side.thawed():
        waited = side.ask("warm_call", name=name, seed=seeds[0])["waited_ms"]
        loop = seeds[1:-1] if cuda else seeds[1:]
        for k, seed in enumerate(loop):  # a seed an ask, sent once the call before returned
            side.ask("loop_call", name=name, seed=seed, first=k == 0, last=k == len(loop) - 1, keep=keep)
        if cuda:
            side.ask("gpu_call", name=name, seed=seeds[-1], keep=keep)
    return waited


def every_call_checked(request: dict, seeds: list[int], learner, ruler) -> list[dict]:
    """Each of the round's calls, the warm call's included, against the oracle's on the same input: at places drawn
    now, after every call returned (tutor.harness.call_checks), so no call is worth skipping; and one call drawn now
    compared whole, at the puzzle's own limit, so no call can tell that it is not the one."""
    seed, index = secrets.randbelow(2**62), secrets.randbelow(len(seeds))
    mine = learner.ask("sampled", name=request["candidate"], seed=seed, whole=index)
    if request["oracle"] in request["time"] and request["oracle"] != request["candidate"]:
        theirs = ruler.ask("sampled", name=request["oracle"], seed=seed, whole=index)
    else:  # an oracle the ruler did not time: it runs it on each input, sampled here at the same places
        outs = [ruler.ask("run", name=request["oracle"], seed=s)["out"] for s in seeds]
        theirs = {"whole": outs[index], "samples": [
            o if "problem" in o else call_checks.sampled(o["tensor"], seed, o["cuda"], o.get("strides")) for o in outs]}
    checks = [judged(request, ruler, s, m, t)
              for s, m, t in zip(seeds, mine["samples"], theirs["samples"], strict=True)]
    if mine["whole"] is not None and theirs["whole"] is not None:
        checks.append(judged(request, ruler, seeds[index], mine["whole"], theirs["whole"]))
    return checks


def judged(request: dict, ruler, seed: int, mine: dict, theirs: dict) -> dict:
    """The learner's output on the input `seed` makes against the oracle's (tutor.harness.checks.compare); where the
    puzzle's output depends on its own path (correctness judged: a greedy decode's tokens), judged along that path
    by the oracle instead (Worker.judge): each choice's score against the best it could have had. Whole outputs
    only: a sample would leave out the choices that set the path."""
    plain = compare(mine, theirs)
    if not request.get("correctness", {}).get("judged") or plain.get("problem"):
        return plain
    if mine.get("whole") is False:
        return {"ok_structure": False, "problem": "a decoded output is judged whole: no more than "
                                                  f"{call_checks.SAMPLED} values"}
    verdict = ruler.ask("judge", name=request["oracle"], seed=seed, out=mine)
    return {**compare(verdict["scored"], verdict["best"]), "judged": True}


def merge(checks: list, timed_checks: list, theirs: dict, mine: dict, stalled: list[str]) -> dict:
    """One result, in the shape graders read, from the two processes' own reports."""
    violations = list(mine.get("violations", []))
    if stalled:
        violations.append(f"GPU work your process left running kept the GPU busy while {sorted(set(stalled))} "
                          "waited to be timed: forward() must finish its work before it returns")
    result = {
        "checks": checks, "timed_checks": timed_checks,
        "samples_ms": {**theirs["samples_ms"], **mine["samples_ms"]},
        "gpu_samples_ms": {**theirs["gpu_samples_ms"], **mine["gpu_samples_ms"]},
        "host_timed": [*theirs["host_timed"], *mine["host_timed"]],
        "clocks": {**theirs["clocks"], **mine["clocks"]},
        "timing_note": mine["timing_note"] or theirs["timing_note"],
        "violations": violations,
        "memory": {"resident_bytes": {**theirs["resident_bytes"], **mine["resident_bytes"]},
                   "growth_bytes": mine["growth_bytes"], "candidate": mine.get("memory_facts", {}),
                   "rank_kept": mine.get("rank_kept", [])},
    }
    if mine.get("allocator_peak") and theirs.get("allocator_peak"):  # a memory budget (graders/puzzle23.py)
        result["memory"]["allocator_peak"] = {"mine": mine["allocator_peak"], "theirs": theirs["allocator_peak"]}
    if mine.get("compile"):
        result["compile"] = mine["compile"]
    for key in ("facts", "floor"):  # the ruler's: the spec's facts, the physical floor
        if theirs.get(key):
            result[key] = theirs[key]
    return result
