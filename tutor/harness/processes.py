"""The grade's processes: fork a worker, and freeze or thaw every process learner code started.

While a comparator is timed, the candidate's process and everything it started (threads
go with their process; child processes, compile workers, a daemon that left its session)
are stopped with SIGSTOP, which no code can catch or ignore. The coordinator makes itself a
child subreaper first, so a process that double-forks to escape is handed to it, where it
is still found and stopped.
"""

from __future__ import annotations

import contextlib
import ctypes
import os
import signal
import time
from multiprocessing.connection import Connection, Pipe
from pathlib import Path
from typing import Callable

PR_SET_PDEATHSIG, PR_SET_CHILD_SUBREAPER = 1, 36  # linux/prctl.h


def become_subreaper() -> None:
    """Orphaned descendants are re-parented here instead of to init (Linux; elsewhere a no-op)."""
    with contextlib.suppress(OSError, AttributeError):
        ctypes.CDLL(None, use_errno=True).prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0)


def end_with_caller(caller_pid: int) -> None:
    """Be sent SIGTERM, the signal a cancelled run gets, when the tutor process that started this one dies (Linux;
    elsewhere a no-op): a tutor killed outright, its terminal closed, leaves no run behind. Not under a profiler's
    wrapper: the profiler is the parent there, and what its threads do is its own."""
    with contextlib.suppress(OSError, AttributeError):
        ctypes.CDLL(None, use_errno=True).prctl(PR_SET_PDEATHSIG, signal.SIGTERM, 0, 0, 0)
    if os.getppid() != caller_pid:  # it died before we asked
        os.kill(os.getpid(), signal.SIGTERM)


def fork_worker(body: Callable[[Connection], None]) -> tuple[int, Connection]:
    """Run `body(connection)` in a forked child that exits when it returns; the parent's end of the pipe."""
    mine, theirs = Pipe(duplex=True)
    pid = os.fork()
    if pid == 0:  # the child: nothing of the parent's loop runs past this point
        code = 0
        try:
            mine.close()
            body(theirs)
        except BaseException:  # noqa: BLE001 - a child must never return into the parent's code
            import traceback
            traceback.print_exc()
            code = 5
        finally:
            os._exit(code)
    theirs.close()
    return pid, mine


def _parents() -> dict[int, int]:
    """pid -> parent pid for every process this user can see."""
    parents = {}
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            # The command name (field 2) may hold spaces and parentheses: split after its last ')'.
            fields = stat.read_text().rsplit(")", 1)[1].split()
            parents[int(stat.parent.name)] = int(fields[1])
        except (OSError, IndexError, ValueError):
            continue  # it exited while we looked
    return parents


# Where the kernel lists each thread's children (CONFIG_PROC_CHILDREN): the learner's tree is then read
# from its root in a few small files instead of every process's stat (3 ms, three times for each
# operation the candidate is asked: a sixth of a puzzle0 quick check).
CHILDREN_LISTED = Path(f"/proc/{os.getpid()}/task/{os.getpid()}/children").exists()


def _children(pid: int) -> set[int]:
    """The children of every thread of `pid` (a subreaper's adopted ones included)."""
    kids: set[int] = set()
    try:
        tasks = os.listdir(f"/proc/{pid}/task")
    except OSError:
        return kids  # it exited
    for tid in tasks:
        try:
            kids.update(int(child) for child in Path(f"/proc/{pid}/task/{tid}/children").read_text().split())
        except (OSError, ValueError):
            continue  # the thread ended while we looked
    return kids


def _tree(roots: set[int], parents: dict[int, int] | None = None) -> set[int]:
    """`roots` and every process below them (from `parents`, pid -> parent pid, where the kernel lists no children)."""
    if not CHILDREN_LISTED and parents is None:
        parents = _parents()
    found, frontier = set(roots), set(roots)
    while frontier:
        if CHILDREN_LISTED:
            frontier = set().union(*(_children(pid) for pid in frontier)) - found
        else:
            frontier = {pid for pid, ppid in parents.items() if ppid in frontier and pid not in found}
        found |= frontier
    return found


def descendants(pid: int) -> set[int]:
    """Every process below `pid`: its children, theirs, and so on."""
    return _tree({pid}) - {pid}


def cpu_ns(pid: int) -> int:
    """The CPU time `pid` used, its children's that it waited for included (/proc's clock ticks); 0 once it is gone."""
    try:
        # The command name (field 2) may hold spaces and parentheses: split after its last ')'. Fields 14-17:
        # utime, stime, cutime, cstime.
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
        return sum(map(int, fields[11:15])) * 10**9 // os.sysconf("SC_CLK_TCK")
    except (OSError, IndexError, ValueError):
        return 0


def learner_side(candidate: int, trusted: set[int]) -> set[int]:
    """The candidate and every descendant of it, plus whatever was re-parented to us and is not `trusted`."""
    if CHILDREN_LISTED:
        return _tree({candidate} | (_children(os.getpid()) - trusted))
    parents = _parents()
    if not parents:  # no /proc: the candidate alone
        return {candidate}
    me = os.getpid()
    return _tree({candidate} | {pid for pid, ppid in parents.items() if ppid == me and pid not in trusted}, parents)


def freeze(candidate: int, trusted: set[int]) -> None:
    """SIGSTOP the learner's side, again until no new process appears (one may fork while we look)."""
    stopped: set[int] = set()
    for _ in range(10):
        new = learner_side(candidate, trusted) - stopped
        if not new:
            break
        _send(new, signal.SIGSTOP)
        stopped |= new
    _wait_until_stopped(stopped)


def _wait_until_stopped(pids: set[int], limit_s: float = 1.0) -> None:
    """SIGSTOP is delivered asynchronously: wait until every thread of every pid reports stopped."""
    deadline = time.monotonic() + limit_s
    for pid in pids:
        for stat in Path(f"/proc/{pid}/task").glob("*/stat"):
            while time.monotonic() < deadline:
                try:
                    state = stat.read_text().rsplit(")", 1)[1].split()[0]
                except (OSError, IndexError):
                    break  # gone
                if state in "TtZX":
                    break
                time.sleep(0.0002)


def _send(pids: set[int], sig: int) -> None:
    """`sig` to each of `pids`, those already gone (or not ours to signal) passed over."""
    for pid in pids:
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.kill(pid, sig)


def thaw(candidate: int, trusted: set[int]) -> None:
    _send(learner_side(candidate, trusted), signal.SIGCONT)


def kill_tree(pid: int) -> None:
    """SIGKILL `pid` and every process below it, and nothing else of the caller's."""
    _send(_tree({pid}), signal.SIGKILL)


def kill_all(candidate: int, trusted: set[int]) -> None:
    """End the learner's side, whatever it started: nothing of it outlives the grade."""
    _send(learner_side(candidate, trusted), signal.SIGKILL)
