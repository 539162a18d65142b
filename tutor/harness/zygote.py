"""The warm harness: a process that has imported torch and waits to fork harness runs.

    python -m tutor.harness.zygote SOCKET [--owner PID] [--idle-s SECONDS]

A cold run pays for a fresh interpreter and `import torch` (2-9 s) before anything of the
puzzle happens. This process pays once, then forks one child per run: the child is what
`python -m tutor.harness REQUEST.json` would be, with the caller's environment, working
folder, output log and event pipes (passed over the Unix socket, tutor.warm), in a session
of its own so the caller can stop it and everything it started. It never initialises CUDA,
runs a workload or keeps anything a run did: a forked child shares nothing back, so every
fairness property of a cold run holds (tests/test_warm.py).

It exits when every process that owns it has exited and no run is left, after `--idle-s`
without a run when nobody owns it, or when asked.
"""

from __future__ import annotations

import argparse
import contextlib
import importlib
import json
import os
import random
import selectors
import signal
import socket
import sys
import threading
import time

from tutor.harness.collector import imports_kept
from tutor.protocol import TERM_GRACE_S

# What a run imports anyway, in the order it would. torch and the harness are always preloaded; the
# libraries are a bonus, dropped (--torch-only) if a child forked after them cannot run CUDA: CUDA does
# not survive a fork once the driver is initialised, and a library that asks about the GPU as it loads
# initialises it (gemlite reads the SM count at import, so it is never here; Inductor and torchao ask
# whether there is a GPU, which a forked child answers for them: gpu_questions_answered_by_a_child).
LIBRARIES = ("torch._dynamo", "torch._inductor.compile_fx", "triton", "torchao")
PRELOAD_ENV = "INFPROF_PRELOAD"
HARNESS = ("tutor.harness.__main__", "tutor.harness.lockstep", "tutor.harness.worker", "tutor.harness.alone")
MAX_MESSAGE = 1 << 20
CLIENT_TIMEOUT_S = 10.0


def bonus_libraries() -> tuple[str, ...]:
    """The libraries worth preloading on this machine: those the GPU puzzles' runs import, where torch is a CUDA or
    ROCm build. A CPU build runs the CPU puzzles alone, whose runs compile only where learner code asks: Dynamo's and
    Inductor's import there would cost every warm harness and ruler keeper 2.6 s more CPU as it starts (4.4 s against
    1.8 s with torch and the harness alone, on the 2-core machine) for runs that mostly never use them; a run that
    does imports them itself. INFPROF_PRELOAD=all preloads them on a CPU build too, for a harness whose runs compile
    (the test suite's, whose every torch.compile run paid 2.5 s for them)."""
    import torch

    if os.environ.get(PRELOAD_ENV) == "all":
        return LIBRARIES
    return LIBRARIES if torch.version.cuda or torch.version.hip else ()


def preload(libraries: tuple[str, ...]) -> list[str]:
    """Import what a run would; a library that is missing or broken here is left to the run to report."""
    import torch

    loaded = ["torch"]
    with gpu_questions_answered_by_a_child() if libraries else contextlib.nullcontext():
        for name in (*libraries, *HARNESS):
            try:
                importlib.import_module(name)
            except Exception:  # noqa: BLE001 - the run reports it in its own words
                continue
            loaded.append(name)
    if torch.cuda.is_initialized():
        raise SystemExit(f"importing {', '.join(loaded)} initialised CUDA: a warm harness cannot fork after that")
    if threading.active_count() != 1:  # a thread would not survive the fork, and might hold a lock
        raise SystemExit(f"the imports started {threading.active_count() - 1} thread(s): forking is unsafe")
    return loaded


@contextlib.contextmanager
def gpu_questions_answered_by_a_child():
    """torch.cuda.is_available() and device_count() answered, while the libraries load, as a child forked now finds
    them. Inductor and torchao ask as they load: asked here, the driver would initialise CUDA, and no child forked
    after could run a kernel (benchmarks/preload_probe.py, on an H200 with torch 2.11), or NVML would start a thread
    of its own in the process every run forks from. What they cached from the answer, their runs would have found."""
    import torch

    found = answer_of_a_child(lambda: str(torch.cuda.device_count() if torch.cuda.is_available() else 0).encode())
    count = int(found) if found.isdigit() else 0
    asked = torch.cuda.is_available, torch.cuda.device_count
    torch.cuda.is_available, torch.cuda.device_count = (lambda: count > 0), (lambda: count)
    try:
        yield
    finally:
        torch.cuda.is_available, torch.cuda.device_count = asked


def answer_of_a_child(question) -> bytes:
    """What `question()` returns (bytes) in a child forked now; b"" where it fails."""
    read, write = os.pipe()
    pid = os.fork()
    if pid == 0:
        answer = b""
        try:
            answer = question()
        except BaseException:  # noqa: BLE001 - any failure is the answer
            pass
        finally:
            os.write(write, answer)
            os._exit(0)
    os.close(write)
    os.waitpid(pid, 0)
    with os.fdopen(read, "rb") as answer:
        return answer.read()


def cuda_survives_fork() -> bool | None:
    """Whether a child forked now can run a CUDA kernel; None where there is no GPU to run one on."""
    def question() -> bytes:
        import torch
        if not torch.cuda.is_available():
            return b"-"
        return b"1" if float(torch.ones(4, device="cuda").sum()) == 4.0 else b"0"

    return {b"1": True, b"-": None}.get(answer_of_a_child(question), False)


def listen(path: str, backlog: int) -> tuple[socket.socket, int]:
    """A Unix socket at `path` that only this user may connect to, listening; and its inode (see `unlisten`)."""
    listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    with contextlib.suppress(FileNotFoundError):
        os.unlink(path)
    old = os.umask(0o077)
    try:
        listener.bind(path)
    finally:
        os.umask(old)
    listener.listen(backlog)
    return listener, os.stat(path).st_ino


def unlisten(path: str, listener: socket.socket, bound: int) -> None:
    """Close the socket, and remove its path and pid file where they are still ours (not a newer process's)."""
    with contextlib.suppress(FileNotFoundError):
        if os.stat(path).st_ino == bound:
            os.unlink(path)
    pid_file = os.path.splitext(path)[0] + ".pid"  # written by tutor.warm when it started us
    with contextlib.suppress(OSError, ValueError):
        if int(open(pid_file).read()) == os.getpid():
            os.unlink(pid_file)
    listener.close()


def read_message(conn: socket.socket) -> tuple[dict, list[int]]:
    """One JSON line and the file descriptors sent with it."""
    data, fds, _, _ = socket.recv_fds(conn, MAX_MESSAGE, 8)
    while not data.endswith(b"\n"):
        more = conn.recv(MAX_MESSAGE)
        if not more or len(data) > MAX_MESSAGE:
            for fd in fds:
                os.close(fd)
            raise ValueError("message cut short")
        data += more
    return json.loads(data), list(fds)


def send(conn: socket.socket, message: dict) -> None:
    with contextlib.suppress(OSError):  # the caller hung up: nothing to tell
        conn.sendall(json.dumps(message).encode() + b"\n")


def become_run(request: dict, fds: list[int], closing: list) -> None:
    """In the forked child: turn into a harness run for the caller, run it, and exit with its code."""
    code = 1
    try:
        signal.set_wakeup_fd(-1)
        for sig in (signal.SIGCHLD, signal.SIGTERM):
            signal.signal(sig, signal.SIG_DFL)
        signal.signal(signal.SIGINT, signal.default_int_handler)
        for thing in closing:
            thing.close()
        os.setsid()  # its own session and group: the caller stops the run and all it started at once
        log, event_fd, nonce_fd = fds
        devnull = os.open(os.devnull, os.O_RDONLY)
        os.dup2(devnull, 0)
        os.dup2(log, 1)
        os.dup2(log, 2)
        os.close(devnull)
        os.close(log)
        os.chdir(request["cwd"])
        os.environ.clear()
        os.environ.update(request["env"])
        from tutor.protocol import EVENT_FD_ENV, NONCE_FD_ENV
        os.environ[EVENT_FD_ENV], os.environ[NONCE_FD_ENV] = str(event_fd), str(nonce_fd)
        sys.argv = ["-m", *request["argv"]]
        random.seed()  # as a fresh interpreter would: no two runs share a generator's state
        from tutor.harness.__main__ import main
        code = main(request["argv"])
    except SystemExit as e:  # learner code may call sys.exit(): the run ends as a process would
        code = e.code if isinstance(e.code, int) else 1
    except BaseException:  # noqa: BLE001 - never return into the warm harness's loop
        import traceback
        traceback.print_exc()
        code = 4
    finally:
        for stream in (sys.stdout, sys.stderr):
            with contextlib.suppress(Exception):
                stream.flush()
        os._exit(code)


class OwnedServer:
    """What the warm harness and the ruler keeper share: a socket only this user reaches, the processes that own the
    server, and its end (asked to stop; every owner gone; or, owned by none, `idle_s` without work). Each answers a
    run its own way; `own`, `stop` and a status here."""

    def __init__(self, path: str, owners: set[int], idle_s: float, preloaded: list[str], backlog: int):
        self.path, self.owners, self.idle_s, self.preloaded = path, owners, idle_s, preloaded
        self.last_active = time.monotonic()
        self.stopping = False
        self.listener, self.bound = listen(path, backlog)

    def busy(self) -> bool:
        """Work under way that keeps the server whatever its owners do."""
        return False

    def should_exit(self) -> bool:
        if self.stopping:
            return True
        if self.busy():
            return False
        if self.owners:
            self.owners = {pid for pid in self.owners if alive(pid)}
            return not self.owners
        return time.monotonic() - self.last_active > self.idle_s

    def read(self, conn: socket.socket) -> tuple[dict, list[int]] | None:
        """A caller's message and the fds sent with it; None (the caller hung up on) for one that cannot be read."""
        conn.settimeout(CLIENT_TIMEOUT_S)
        try:
            return read_message(conn)
        except (OSError, ValueError):
            conn.close()
            return None

    def reply(self, conn: socket.socket, message: dict, fds: list[int], **status) -> None:
        """Any op but a run: `own` and `stop` done, and the server's status answered, `status` in it."""
        for fd in fds:
            os.close(fd)
        if message.get("op") == "own":
            self.owners.add(int(message["pid"]))
        elif message.get("op") == "stop":
            self.stopping = True
        send(conn, {"pid": os.getpid(), "preloaded": self.preloaded, "owners": sorted(self.owners), **status})
        conn.close()

    def close(self) -> None:
        unlisten(self.path, self.listener, self.bound)


class Zygote(OwnedServer):
    def __init__(self, path: str, owners: set[int], idle_s: float, preloaded: list[str]):
        super().__init__(path, owners, idle_s, preloaded, backlog=16)
        self.runs: dict[int, socket.socket] = {}  # child pid -> the caller waiting for its exit
        self.abandoned: dict[int, float] = {}  # child pid -> when to SIGKILL it: its caller hung up
        self.wake_read, self.wake_write = os.pipe()
        os.set_blocking(self.wake_write, False)
        os.set_blocking(self.wake_read, False)
        signal.set_wakeup_fd(self.wake_write, warn_on_full_buffer=False)
        signal.signal(signal.SIGCHLD, lambda *_: None)  # wakes select() through the fd above
        signal.signal(signal.SIGTERM, lambda *_: setattr(self, "stopping", True))

    def serve(self) -> None:
        with selectors.DefaultSelector() as sel:
            sel.register(self.listener, selectors.EVENT_READ)
            sel.register(self.wake_read, selectors.EVENT_READ)
            while not self.should_exit():
                for key, _ in sel.select(timeout=1.0):
                    if key.fileobj is self.listener:
                        self.answer(self.listener.accept()[0], sel)
                    elif key.data is not None:  # a run's caller: it says nothing until it hangs up
                        self.caller_spoke(key.fileobj, key.data, sel)
                    else:
                        with contextlib.suppress(BlockingIOError):
                            os.read(self.wake_read, 4096)
                self.reap(sel)
                self.end_abandoned()
        self.close()

    def busy(self) -> bool:
        return bool(self.runs)

    def answer(self, conn: socket.socket, sel: selectors.BaseSelector) -> None:
        if (got := self.read(conn)) is None:
            return
        message, fds = got
        if message.get("op") == "run" and len(fds) == 3:
            self.fork_run(conn, message, fds, sel)
            return
        self.reply(conn, message, fds, runs=len(self.runs))

    def fork_run(self, conn: socket.socket, request: dict, fds: list[int], sel: selectors.BaseSelector) -> None:
        self.last_active = time.monotonic()
        pid = os.fork()
        if pid == 0:
            # Nothing of the warm harness's stays open in the run: learner code finds what a cold run has.
            become_run(request, fds, [sel, self.listener, conn, *self.runs.values(), BareFd(self.wake_read),
                                      BareFd(self.wake_write)])
        for fd in fds:  # the child holds them now: the caller sees EOF when the run ends
            os.close(fd)
        send(conn, {"started": pid})
        self.runs[pid] = conn
        sel.register(conn, selectors.EVENT_READ, pid)

    def caller_spoke(self, conn: socket.socket, pid: int, sel: selectors.BaseSelector) -> None:
        """A run's caller hung up (killed outright, its terminal closed): stop the run as a cancel would, SIGTERM
        to its session, and SIGKILL what is left of it a moment later."""
        try:
            if conn.recv(4096, socket.MSG_DONTWAIT):
                return  # a caller never writes after asking; ignored
        except BlockingIOError:
            return
        except OSError:
            pass
        sel.unregister(conn)
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(pid, signal.SIGTERM)
        self.abandoned[pid] = time.monotonic() + TERM_GRACE_S

    def end_abandoned(self) -> None:
        for pid, deadline in list(self.abandoned.items()):
            if pid not in self.runs:
                del self.abandoned[pid]
            elif time.monotonic() > deadline:
                with contextlib.suppress(ProcessLookupError, PermissionError):
                    os.killpg(pid, signal.SIGKILL)
                del self.abandoned[pid]

    def reap(self, sel: selectors.BaseSelector) -> None:
        while self.runs:
            try:
                pid, status = os.waitpid(-1, os.WNOHANG)
            except ChildProcessError:
                return
            if pid == 0:
                return
            conn = self.runs.pop(pid, None)
            if conn is not None:
                with contextlib.suppress(KeyError, ValueError):
                    sel.unregister(conn)  # a caller that hung up was unregistered then
                send(conn, {"exit": os.waitstatus_to_exitcode(status)})
                conn.close()
            self.last_active = time.monotonic()


class BareFd:
    """A bare fd with close(), so the child can drop it with the sockets."""

    def __init__(self, fd: int):
        self.fd = fd

    def close(self) -> None:
        with contextlib.suppress(OSError):
            os.close(self.fd)


def alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def serve_preloaded(module: str, argv: list[str], idle_s: float, server, ready: str) -> int:
    """The whole life of a process that forks harness processes (`python -m MODULE SOCKET [--owner PID] [--idle-s
    S]`): what a run imports, preloaded; then `server(socket, owners, idle_s, preloaded)` made, its `ready` line
    logged, and served until it ends. Before its socket exists: nothing may fork from a process whose children cannot
    use the GPU, so where the libraries break that it starts again with torch alone, and where torch alone does it
    exits."""
    started = time.monotonic()
    parser = argparse.ArgumentParser(prog=f"python -m {module}")
    parser.add_argument("socket")
    parser.add_argument("--owner", type=int, action="append", default=[])
    parser.add_argument("--idle-s", type=float, default=idle_s)
    parser.add_argument("--torch-only", action="store_true", help="preload torch and the harness, no library")
    args = parser.parse_args(argv)
    with imports_kept():  # kept to the end, and forked from: out of every collection, here and in the children
        preloaded = preload(() if args.torch_only else bonus_libraries())
    if cuda_survives_fork() is False:
        if args.torch_only:
            raise SystemExit("a child forked after `import torch` cannot run CUDA here: runs start cold")
        print(f"a child forked after importing {', '.join(preloaded)} cannot run CUDA: torch alone, again", flush=True)
        os.execv(sys.executable, [sys.executable, "-m", module, *argv, "--torch-only"])
    made = server(args.socket, set(args.owner), args.idle_s, preloaded)
    print(f"{ready} in {time.monotonic() - started:.1f} s: {', '.join(preloaded)}", flush=True)
    made.serve()
    return 0


def main(argv: list[str]) -> int:
    return serve_preloaded("tutor.harness.zygote", argv, 1200.0, Zygote, "warm")


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
