"""The ruler keeper: one watch session's quick checks against one ruler, prepared once.

    python -m tutor.harness.keeper SOCKET [--owner PID] [--idle-s SECONDS]

A quick check spends most of its time making the comparators' side: a process, its CUDA
context, the oracle's and the baseline's weights, their compiles and graph captures. Between
two saves of one watch session none of that changes. This process asks for check runs as the
warm harness does (tutor.warm: the caller's request, environment, folder, output log and event
pipes over the Unix socket) and answers each itself, in the lockstep of tutor.harness.lockstep,
against a ruler it keeps (lockstep.KeptRuler): made by the first check, kept while the requests
name the same comparators, and dropped after any check that failed. Each check's candidate is
forked afresh from this process, which never touches the GPU, so learner code starts as it does
in any check and nothing of one check's learner code reaches the next. Only quick checks come
here: a grade always makes a fresh ruler.

It exits when every process that owns it has exited, after `--idle-s` without a check when
nobody owns it, or when asked; a cancelled check ends it (the caller stops its process group).
Asked to `release` (tutor.warm.release_kept_rulers: by every other run on the GPU, a grade's or a
profile's, before it starts), it ends its ruler, whose process would otherwise hold the GPU open beside
that run's; the session's next check makes another.
"""

from __future__ import annotations

import contextlib
import faulthandler
import os
import random
import selectors
import signal
import socket
import sys
import time
from pathlib import Path

from tutor.harness import zygote
from tutor.harness.loading import HarnessFailure


class Keeper(zygote.OwnedServer):
    def __init__(self, path: str, owners: set[int], idle_s: float, preloaded: list[str]):
        import torch

        from tutor.harness.lockstep import KeptRuler

        super().__init__(path, owners, idle_s, preloaded, backlog=4)
        self.kept = KeptRuler(torch.get_num_threads())
        torch.set_num_threads(1)  # no thread pool here: every check forks from this process
        self.checks = 0
        signal.signal(signal.SIGTERM, self._stop)

    def _stop(self, *_) -> None:
        self.stopping = True

    def serve(self) -> None:
        with selectors.DefaultSelector() as sel:
            sel.register(self.listener, selectors.EVENT_READ)
            while not self.should_exit():
                if sel.select(timeout=1.0):
                    self.answer(self.listener.accept()[0])
        self.close()

    def answer(self, conn: socket.socket) -> None:
        if (got := self.read(conn)) is None:
            return
        message, fds = got
        if message.get("op") == "run" and len(fds) == 3:
            zygote.send(conn, {"started": os.getpid()})
            code = self.check(message, fds)
            zygote.send(conn, {"exit": code})
            conn.close()
            return
        if message.get("op") == "release":  # a run that times things is starting: the kept ruler lets go of the GPU
            self.kept.close()
        self.reply(conn, message, fds, checks=self.checks, ruler=self.kept.ruler.pid if self.kept.ruler else None,
                   threads=threads())

    def check(self, message: dict, fds: list[int]) -> int:
        """One check run, as `python -m tutor.harness REQUEST` would run it, with this process's ruler; its exit code."""
        from tutor.harness.__main__ import main
        from tutor.protocol import EVENT_FD_ENV, NONCE_FD_ENV

        log, event_fd, nonce_fd = fds
        saved = os.dup(1), os.dup(2)
        os.dup2(log, 1)
        os.dup2(log, 2)
        os.close(log)
        try:
            os.chdir(message["cwd"])
            os.environ.clear()
            os.environ.update(message["env"])
            os.environ[EVENT_FD_ENV], os.environ[NONCE_FD_ENV] = str(event_fd), str(nonce_fd)
            random.seed()
            return main(message["argv"], run_request=self._run)
        finally:
            for stream in (sys.stdout, sys.stderr):
                with contextlib.suppress(Exception):
                    stream.flush()
            for fd, saved_fd in zip((1, 2), saved):
                os.dup2(saved_fd, fd)
                os.close(saved_fd)
            signal.signal(signal.SIGTERM, self._stop)  # the check's own handler ended with it
            self._reap()
            self.checks += 1
            self.last_active = time.monotonic()
            # A thread would not survive into the next check's fork: end, and let a fresh one start.
            if (count := threads()) > 1:
                print(f"{count} threads after a check ({', '.join(thread_names())}): the keeper ends", flush=True)
                self.stopping = True

    def _run(self, request: dict, sink) -> dict:
        from tutor.harness import lockstep

        if request["mode"] != "check" or request.get("ranks", 1) > 1 or "serving" in request:
            raise HarnessFailure("bad_request", "the ruler keeper answers quick checks on one GPU or the CPU only")
        return lockstep.check_with_kept_ruler(request, sink, self.kept)

    def _reap(self) -> None:
        """Collect the check's ended processes (its candidate, whatever that started); never the kept ruler."""
        while True:
            try:
                pid, _ = os.waitpid(-1, os.WNOHANG)
            except ChildProcessError:
                return
            if pid == 0:
                return
            if self.kept.ruler is not None and pid == self.kept.ruler.pid:
                self.kept.close()  # it died between checks: the next one makes another

    def close(self) -> None:
        self.kept.close()
        super().close()


def threads() -> int:
    """This process's threads, native ones included (Linux; 1 elsewhere)."""
    try:
        return len(os.listdir("/proc/self/task"))
    except OSError:
        return 1


def thread_names() -> list[str]:
    """The names of this process's threads other than its first, as the kernel knows them (a CUDA driver's, a
    thread pool's): what the keeper's log says when one outlives a check."""
    names = []
    with contextlib.suppress(OSError):
        for task in sorted(os.listdir("/proc/self/task"), key=int)[1:]:
            with contextlib.suppress(OSError):  # it may end as it is read
                names.append(Path(f"/proc/self/task/{task}/comm").read_text().strip())
    return names


def main(argv: list[str]) -> int:
    # SIGUSR1 prints every thread's stack (into the log of the check under way): what a stuck check waits on.
    faulthandler.register(signal.SIGUSR1, all_threads=True)
    # Each check's candidate and the ruler are forked from here, as a warm harness's runs are.
    return zygote.serve_preloaded("tutor.harness.keeper", argv, 600.0, Keeper, "keeping")


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
