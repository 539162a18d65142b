"""One process per GPU for a multi-GPU puzzle (issue 18): a rank group, forked together, asked together.

Each rank is a worker forked like the grade's others (tutor.harness.processes.fork_worker, before any
CUDA work in the parent), with torch.distributed initialised in it: NCCL on CUDA (rank r drives GPU r),
gloo on the CPU, so the launcher and its tests run on a GPU-less machine for real. The coordinator
speaks to each rank over its own pipe, never through a collective: a workload that deadlocks its
collectives cannot deadlock the harness, whose wait has a limit.

A call of a multi-GPU workload lasts until its slowest rank is done, so timings merge by the maximum
over ranks, call by call (`slowest`). Ranks line up on a harness-only gloo group before each timed call
(`aligned`), so a rank's time holds its own work and its collectives' waits, not the pipes' skew.
"""

from __future__ import annotations

import contextlib
import datetime
import os
import time
import traceback
from dataclasses import dataclass
from multiprocessing.connection import Connection, wait
from typing import Callable

from tutor.harness import processes, wire
from tutor.harness.loading import HarnessFailure

# A handler answers one message in a rank: handler(rank, world, message) -> reply (plain values, CPU tensors).
Handler = Callable[[int, int, dict], dict]
REPLY_LIMIT_S = 120.0  # how long the coordinator waits for every rank to answer one message
STOP_LIMIT_S = 10.0  # how long a rank is given to leave its process group and exit


RENDEZVOUS_S = 60  # how long a rank waits for the others to join its process group


def _rank_body(rank: int, world: int, backend: str, handler: Handler,
               in_child: Callable[[int], None] | None) -> Callable[[Connection], None]:
    def body(conn: Connection) -> None:
        if in_child:
            in_child(rank)
        import torch
        import torch.distributed as dist

        os.environ.update(RANK=str(rank), WORLD_SIZE=str(world))
        if backend == "nccl":
            torch.cuda.set_device(rank)
        else:  # a CPU rank stands for one GPU: one thread. And forked from a parent whose OpenMP pool ran, a
            # child that enters a parallel region can hang forever (seen in the test suite: torch.ones(4M)).
            torch.set_num_threads(1)
        limit = datetime.timedelta(seconds=RENDEZVOUS_S)
        # Rank 0's store listens on a port the kernel picks as it binds, and the others learn it through the
        # coordinator: a port found free and bound later could be taken in between (a rank died so, once, in a
        # test suite of eight workers).
        if rank == 0:
            store = dist.TCPStore("127.0.0.1", 0, world, is_master=True, timeout=limit, wait_for_workers=False)
            wire.send(conn, {"port": store.port})
        else:
            store = dist.TCPStore("127.0.0.1", wire.recv(conn)["port"], world, is_master=False, timeout=limit)
        os.environ.update(MASTER_ADDR="127.0.0.1", MASTER_PORT=str(store.port))
        dist.init_process_group(backend, store=store, rank=rank, world_size=world, timeout=limit)
        # The harness's own group: barriers that no workload's collective can stand in.
        harness_group = dist.new_group(backend="gloo")
        try:
            while True:
                try:
                    message = wire.recv(conn)
                except EOFError:
                    return
                if message.get("op") == "stop":
                    return
                try:
                    if message.get("aligned"):
                        dist.barrier(group=harness_group)
                    reply = handler(rank, world, message)
                except HarnessFailure as f:  # the rank's failure is the coordinator's to report, with its rank
                    reply = {"error": {"kind": f.kind, "message": f"rank {rank}: {f.message}", "where": f.where,
                                       "tb": f.tb[-4000:]}}
                except Exception as e:
                    reply = {"error": {"kind": "crashed", "message": f"rank {rank}: {type(e).__name__}: {e}",
                                       "tb": traceback.format_exc()[-4000:]}}
                wire.send(conn, reply)
        finally:
            dist.destroy_process_group()
    return body


@dataclass
class RankGroup:
    """The coordinator's view of a rank group: each rank's process and pipe, rank 0 first."""

    pids: list[int]
    conns: list[Connection]

    @property
    def world(self) -> int:
        return len(self.pids)

    def ask(self, op: str, limit_s: float = REPLY_LIMIT_S, **fields) -> list[dict]:
        """Send every rank the same message, then collect their replies, rank by rank."""
        for conn in self.conns:
            wire.send(conn, {"op": op, **fields})
        replies = _replies(dict(enumerate(self.conns)), limit_s,
                           late=lambda stuck: f"rank {', '.join(map(str, stuck))} did not answer {op!r} within "
                                              f"{limit_s:.0f} s: a collective waiting for a rank that never joins it?",
                           ended=lambda rank: f"rank {rank}'s process ended before it answered {op!r}")
        failed = [replies[r]["error"] for r in sorted(replies) if "error" in replies[r]]
        if failed:
            raise HarnessFailure(failed[0]["kind"], "; ".join(f["message"] for f in failed),
                                 failed[0].get("where", "ranks"), failed[0]["tb"])
        return [replies[r] for r in range(self.world)]

    def stop(self) -> None:
        """Ask every rank to leave its process group and exit; reap them (killed if they do not)."""
        for conn in self.conns:
            try:
                wire.send(conn, {"op": "stop"})
            except OSError:
                pass  # already gone
            conn.close()
        for pid in self.pids:
            _reap(pid)


def _replies(waiting: dict[int, Connection], limit_s: float, late: Callable[[list[int]], str],
             ended: Callable[[int], str]) -> dict[int, dict]:
    """One message from each rank's pipe in `waiting`, in the order they come, none waited for longer than `limit_s`;
    a HarnessFailure worded by `late` (the ranks still silent) or `ended` (a rank whose process is gone) if not."""
    replies: dict[int, dict] = {}
    waiting = dict(waiting)
    while waiting:
        ready = wait(list(waiting.values()), timeout=limit_s)
        if not ready:
            raise HarnessFailure("timeout", late(sorted(waiting)))
        for rank in [r for r, c in waiting.items() if c in ready]:
            try:
                replies[rank] = wire.recv(waiting.pop(rank))
            except (EOFError, OSError) as e:
                raise HarnessFailure("crashed", ended(rank)) from e
    return replies


def _reap(pid: int, limit_s: float = STOP_LIMIT_S) -> None:
    """Wait for a rank to exit; SIGKILL it, and whatever it started, if it has not by the limit."""
    deadline = time.monotonic() + limit_s
    while time.monotonic() < deadline:
        try:
            if os.waitpid(pid, os.WNOHANG)[0]:
                return
        except ChildProcessError:
            return
        time.sleep(0.01)
    processes.kill_tree(pid)  # its own tree: the caller's other children (a warm harness, say) are not the rank's
    with contextlib.suppress(ChildProcessError):
        os.waitpid(pid, 0)


def start(world: int, handler: Handler, backend: str, in_child: Callable[[int], None] | None = None) -> RankGroup:
    """Fork `world` ranks running `handler`, each in a process group of its own size (gloo or nccl);
    `in_child(rank)` runs first in each (the coordinator's pipe to the tutor closed there, say)."""
    forked = [processes.fork_worker(_rank_body(rank, world, backend, handler, in_child)) for rank in range(world)]
    group = RankGroup([pid for pid, _ in forked], [conn for _, conn in forked])
    try:
        port = _replies({0: group.conns[0]}, RENDEZVOUS_S,
                        late=lambda _: f"rank 0 opened no rendezvous within {RENDEZVOUS_S} s",
                        ended=lambda _: "rank 0's process ended before it opened the ranks' rendezvous")[0]["port"]
    except HarnessFailure:
        group.stop()
        raise
    for conn in group.conns[1:]:
        wire.send(conn, {"port": port})
    return group


def slowest(per_rank: list[list[float]]) -> list[float]:
    """Each call's time as the slowest rank saw it: the call is over when every rank is."""
    counts = {len(times) for times in per_rank}
    if len(counts) != 1:
        raise ValueError(f"ranks timed different numbers of calls: {[len(t) for t in per_rank]}")
    return [max(call) for call in zip(*per_rank)]
