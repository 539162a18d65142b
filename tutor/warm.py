"""The caller's side of the warm harness (tutor.harness.zygote): find it, start it, run through it.

One warm harness serves every workspace of this user that runs this very tutor, with this
Python and this environment: its socket's name is a digest of all three, so a changed
source file, another virtual environment or another CUDA_VISIBLE_DEVICES finds no harness and
runs cold (or starts a new one). The TUI and `watch` start one and own it (it exits after
them); other CLI commands use one when it is there and never wait for one.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import select
import socket
import subprocess
import sys
import tempfile
import threading
import time
from dataclasses import dataclass
from typing import ClassVar
from pathlib import Path

from tutor.bytecode import bytecode_cache, seed

SOURCE_ROOT = Path(__file__).resolve().parent.parent
# Environment variables read when torch, triton or Python start: they must match the harness's.
IMPORT_TIME_ENV = ("TORCH", "PYTORCH", "TORCHINDUCTOR", "TORCHDYNAMO", "TRITON", "CUDA", "NVIDIA", "LD_",
                   "OMP_", "MKL_", "PYTHON")
# ...but not the compile caches' folders: each library reads its own when it first compiles, never at import, and a
# run's fork takes its caller's environment whole (tutor.harness.zygote). Inductor writes its folder into os.environ
# as it first compiles: a test process that compiles must still find its warm harness.
COMPILE_CACHE_ENV = ("TORCHINDUCTOR_CACHE_DIR", "TRITON_CACHE_DIR", "TORCH_EXTENSIONS_DIR")
READY_WAIT_S = 90.0  # how long a run waits for a harness that is still warming before it goes cold
CONNECT_TIMEOUT_S = 5.0
RELEASE_WAIT_S = 0.5  # a keeper mid-check answers after it: the run does not wait for that


def warm_mode() -> str:
    """INFPROF_WARM: 0 runs everything cold (to compare, or to rule the warm harness out); 'require'
    fails a run that finds no warm harness (the test suite's --warm pass, the latency benchmark);
    anything else uses one when it is ready."""
    value = os.environ.get("INFPROF_WARM", "1")
    return {"0": "off", "require": "require"}.get(value, "use")


def fingerprint(env: dict[str, str]) -> str:
    """Digest of what a warm harness must share with its caller: Python, tutor's sources, import-time env."""
    digest = hashlib.sha256()
    digest.update(os.path.realpath(sys.executable).encode())
    for path in sorted(SOURCE_ROOT.joinpath("tutor").rglob("*.py")):
        stat = path.stat()
        digest.update(f"{path}:{stat.st_mtime_ns}:{stat.st_size}\n".encode())
    for name in sorted(k for k in env if k.startswith(IMPORT_TIME_ENV) and k not in COMPILE_CACHE_ENV):
        digest.update(f"{name}={env[name]}\n".encode())
    return digest.hexdigest()[:16]


def runtime_dir() -> Path:
    """A folder only this user can enter; short, for a Unix socket's 108-byte path limit."""
    folder = Path(os.environ.get("INFPROF_RUNTIME_DIR") or Path(tempfile.gettempdir()) / f"infprof-tutor-{os.getuid()}")
    folder.mkdir(mode=0o700, exist_ok=True)
    if folder.stat().st_uid != os.getuid():
        raise PermissionError(f"{folder} belongs to another user")
    return folder


@dataclass(frozen=True)
class WarmHarness:
    socket_path: Path
    log_path: Path
    module: ClassVar[str] = "tutor.harness.zygote"  # what start() runs

    @classmethod
    def for_env(cls, env: dict[str, str] | None = None) -> WarmHarness:
        key = fingerprint(harness_environment() if env is None else env)
        folder = runtime_dir()
        return cls(folder / f"warm-{key}.sock", folder / f"warm-{key}.log")

    # -- asking it things --------------------------------------------------------------------

    def _connect(self, timeout_s: float = CONNECT_TIMEOUT_S) -> socket.socket | None:
        if not self.socket_path.exists():
            return None
        conn = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        conn.settimeout(timeout_s)
        try:
            conn.connect(str(self.socket_path))
        except OSError:
            conn.close()
            return None
        return conn

    def ask(self, op: str, timeout_s: float = CONNECT_TIMEOUT_S, **fields) -> dict | None:
        """The harness's answer to `op` (status, own, stop; a keeper's release); None when none is listening or
        none came within `timeout_s`."""
        conn = self._connect(timeout_s)
        if conn is None:
            return None
        with conn:
            try:
                conn.sendall(json.dumps({"op": op, **fields}).encode() + b"\n")
                return json.loads(_read_line(conn))
            except (OSError, ValueError):
                return None

    def state(self) -> str:
        """'ready', 'warming' (started, still importing) or 'off'."""
        if self.ask("status") is not None:
            return "ready"
        return "warming" if _warming_pid(self.log_path, self.module) else "off"

    # -- starting and stopping ----------------------------------------------------------------

    def start(self, owner: int | None = None, idle_s: float = 1200.0) -> str:
        """Start one unless one is ready or warming; `owner` keeps it alive while it lives. Returns the state."""
        state = self.state()
        if state == "ready":
            if owner is None or self.ask("own", pid=owner) is not None:
                return state
            # It answered its last status and closed (its owners had all exited): another, once it has gone.
            state = self._after_exit()
        if state == "warming":
            return state  # the owner is added once it is ready (see `wait_ready`)
        env = harness_environment()
        command = [sys.executable, "-m", self.module, str(self.socket_path), "--idle-s", str(idle_s)]
        if owner is not None:
            command += ["--owner", str(owner)]
        with self.log_path.open("wb") as log:
            proc = subprocess.Popen(command, stdin=subprocess.DEVNULL, stdout=log, stderr=subprocess.STDOUT,
                                    env=env, start_new_session=True, cwd=str(SOURCE_ROOT))
        self.log_path.with_suffix(".pid").write_text(str(proc.pid))
        return "warming"

    def _after_exit(self, limit_s: float = 5.0) -> str:
        """The state once a harness on its way out has gone (or `limit_s` has passed)."""
        deadline = time.monotonic() + limit_s
        while _warming_pid(self.log_path, self.module) and time.monotonic() < deadline:
            time.sleep(0.05)
        return self.state()

    def wait_ready(self, timeout_s: float = READY_WAIT_S, owner: int | None = None) -> bool:
        deadline = time.monotonic() + timeout_s
        while time.monotonic() < deadline:
            if self.ask("own", pid=owner) if owner is not None else self.ask("status"):
                return True
            if not _warming_pid(self.log_path, self.module):
                return False  # it died while warming: its log says why
            time.sleep(0.1)
        return False

    def stop(self) -> bool:
        return self.ask("stop") is not None

    # -- a run through it ---------------------------------------------------------------------

    def spawn(self, argv: list[str], env: dict[str, str], cwd: Path, log_fd: int, event_fd: int,
              nonce_fd: int, wait: bool = True) -> WarmProcess | None:
        """Fork a harness run in the warm harness; None when none is ready (the caller goes cold). `wait`: for
        one still warming."""
        if wait and self.state() == "warming":
            self.wait_ready()
        conn = self._connect()
        if conn is None:
            return None
        message = json.dumps({"op": "run", "argv": argv, "env": env, "cwd": str(cwd)}).encode() + b"\n"
        try:
            socket.send_fds(conn, [message], [log_fd, event_fd, nonce_fd])
            reply = json.loads(_read_line(conn))
        except (OSError, ValueError):
            conn.close()
            return None
        conn.settimeout(None)
        return WarmProcess(int(reply["started"]), conn)


@dataclass(frozen=True)
class RulerKeeper(WarmHarness):
    """One watch session's ruler keeper (tutor.harness.keeper): its quick checks against comparators prepared once.

    Asked and started as the warm harness is; one per workspace and puzzle. A check goes to it only when it is
    ready (never waits for it), else runs as any check does."""

    module: ClassVar[str] = "tutor.harness.keeper"

    @classmethod
    def for_puzzle(cls, workspace: Path, puzzle_id: str, env: dict[str, str] | None = None) -> RulerKeeper:
        key = hashlib.sha256(f"{fingerprint(harness_environment() if env is None else env)}:{workspace.resolve()}:"
                             f"{puzzle_id}".encode()).hexdigest()[:16]
        folder = runtime_dir()
        return cls(folder / f"keep-{key}.sock", folder / f"keep-{key}.log")


def release_kept_rulers() -> int:
    """Ask every ruler keeper of this user to end its kept ruler, whose process holds the GPU open (a grade would
    list it among the processes it shared the GPU with). A keeper busy with a check takes the request once the
    check ends; this does not wait for it. Returns how many answered."""
    folder = runtime_dir()
    keepers = (RulerKeeper(path, path.with_suffix(".log")) for path in sorted(folder.glob("keep-*.sock")))
    return sum(keeper.ask("release", timeout_s=RELEASE_WAIT_S) is not None for keeper in keepers)


class WarmProcess:
    """A run forked by the warm harness, as much of subprocess.Popen as tutor.runner uses.

    Safe from two threads at once, as Popen is: a cancel polls and waits from one thread while the
    run's own thread waits. Whoever reads the exit line sets `returncode`; the socket closes when the
    last reader leaves, never under another's select.
    """

    def __init__(self, pid: int, conn: socket.socket):
        self.pid, self._conn = pid, conn
        self.returncode: int | None = None
        self._buffer = b""
        self._lock = threading.Lock()
        self._readers = 0

    def poll(self) -> int | None:
        return self._read(0.0)

    def wait(self, timeout: float | None = None) -> int:
        code = self._read(timeout)
        if code is None:
            raise subprocess.TimeoutExpired("warm harness run", timeout)
        return code

    def _read(self, timeout: float | None) -> int | None:
        deadline = None if timeout is None else time.monotonic() + timeout
        with self._lock:
            if self.returncode is not None:
                return self.returncode
            self._readers += 1
        try:
            while True:
                left = None if deadline is None else max(0.0, deadline - time.monotonic())
                readable, _, _ = select.select([self._conn], [], [], left)
                with self._lock:
                    if self.returncode is not None:  # the other thread read it meanwhile
                        return self.returncode
                    if readable:
                        try:
                            chunk = self._conn.recv(4096, socket.MSG_DONTWAIT)
                        except BlockingIOError:
                            continue  # the other thread took what woke us
                        if not chunk:  # the warm harness itself died: the run's fate is unknown
                            self.returncode = _lost(self.pid)
                            return self.returncode
                        self._buffer += chunk
                        if b"\n" in self._buffer:
                            self.returncode = int(json.loads(self._buffer.split(b"\n", 1)[0])["exit"])
                            return self.returncode
                    elif deadline is not None and time.monotonic() >= deadline:
                        return None
        finally:
            with self._lock:
                self._readers -= 1
                if self.returncode is not None and self._readers == 0:
                    self._conn.close()


def _lost(pid: int) -> int:
    """The warm harness died under a run: end what is left of the run and report it killed."""
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(pid, 9)
    return -9


def _read_line(conn: socket.socket) -> bytes:
    data = b""
    while not data.endswith(b"\n"):
        chunk = conn.recv(65536)
        if not chunk:
            raise ValueError("the warm harness hung up")
        data += chunk
    return data


def _warming_pid(log_path: Path, module: str) -> int | None:
    """The pid of a harness started for this socket that is still alive (warming, or ready)."""
    try:
        pid = int(log_path.with_suffix(".pid").read_text())
        # The pid alone could be any process's by now: its command line must name this socket.
        command = Path(f"/proc/{pid}/cmdline").read_bytes().split(b"\0")
        if Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0] in "ZX":
            return None  # it exited, and its parent (a TUI that started it) has not reaped it yet
    except (OSError, ValueError, IndexError):
        return None
    if command == [b""]:
        return pid  # still between fork and exec: it was started a moment ago
    return pid if module.encode() in command and str(log_path.with_suffix(".sock")).encode() in command else None


def harness_environment(base: dict[str, str] | None = None) -> dict[str, str]:
    """The environment of every harness process, cold or warm, before a run's own pipes are added."""
    env = dict(os.environ if base is None else base)
    # The harness must import this very tutor package, even when it is run from a source tree.
    env["PYTHONPATH"] = os.pathsep.join(p for p in (str(SOURCE_ROOT), env.get("PYTHONPATH", "")) if p)
    env["PYTHONUNBUFFERED"] = "1"
    env["PYTHONPYCACHEPREFIX"] = bytecode_cache(env)
    seed(Path(env["PYTHONPYCACHEPREFIX"]))
    env.pop("PYTHONDONTWRITEBYTECODE", None)
    return env
