"""Spawn the harness in a subprocess, stream its events, and survive whatever it does.

The subprocess is forked by the warm harness when one is ready (tutor.warm), else started
cold; nothing below depends on which. The child gets a private pipe for protocol events; its stdout/stderr go to
output.log in the run folder. A hang is killed at the deadline (the whole
process group, so compile workers die too), a crash or OOM-kill becomes a
`RunFailed` naming what happened, with the tail of the output.
"""

from __future__ import annotations

import json
import os
import secrets
import selectors
import signal
import subprocess
import sys
import threading
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Callable, Iterator

from tutor import build_locks
from tutor.errors import EnvironmentProblem, TutorError
from tutor.protocol import (CALLER_PID_ENV, ERROR_KINDS, EVENT_FD_ENV, NONCE_FD_ENV, TERM_GRACE_S, death_words,
                            decode)
from tutor.warm import RulerKeeper, WarmHarness, WarmProcess, harness_environment, release_kept_rulers, warm_mode

LOG_NAME = "output.log"
RESULT_NAME = "result.json"  # the harness's raw result (every timing sample), kept with the run
ENVIRONMENT_KINDS = {"no_gpu", "missing_package"}
BUG_ADVICE = "This looks like a bug in infprof-tutor; please report it with the output tail."

ADVICE = {
    "no_gpu": "Run this puzzle on a machine with an NVIDIA GPU (README: 'Using a GPU machine'), or study it "
              "from its recorded profile: infprof-tutor study PUZZLE.",
    "missing_package": "Install the GPU extras (README: 'Using a GPU machine'): pip install -e '.[gpu]' in the "
                       "source tree, or pip install 'infprof-tutor[gpu]'; `infprof-tutor doctor` lists what is missing.",
    "import_error": "Fix the error in the file named above, save, and run again.",
    "bad_workload": "A workload defines prepare(weights, device) and forward(state, x); see the puzzle's starter file.",
    "workload_error": "Your code raised an exception; the output tail shows where.",
    "tampered": "Leave what the harness runs as it was: the message above says what your workload changed.",
    "oom": "Your workload ran out of GPU memory: free what you keep between calls or use smaller buffers.",
    "timeout": "It ran past the time limit: look for an endless loop, a deadlock, or a far too slow path.",
    "crashed": "The workload process died (segfault, illegal memory access or killed): the output tail shows the last words.",
    "bad_request": BUG_ADVICE,
    "harness_bug": BUG_ADVICE,
}


class RunFailed(TutorError):
    """The workload did not produce a result; `kind` says why (protocol.ERROR_KINDS, timeout, crashed)."""

    def __init__(self, kind: str, message: str, output_tail: str = "", where: str = ""):
        super().__init__(message, ADVICE.get(kind, ""), output_tail)
        self.kind, self.where = kind, where


@dataclass
class RunOutcome:
    result: dict
    run_dir: Path
    wall_s: float
    warm: bool = False  # forked by a warm harness
    kept: bool = False  # answered by a ruler keeper (a watch session's quick check)


def output_tail(log: Path, max_chars: int = 3000) -> str:
    if not log.exists():
        return ""
    with log.open("rb") as f:
        f.seek(0, os.SEEK_END)
        f.seek(max(0, f.tell() - max_chars))
        return f.read().decode(errors="replace")


class HarnessRun:
    """One harness subprocess. Iterate `events()`; `result` holds the final result after."""

    def __init__(self, request: dict, run_dir: Path, timeout_s: float, python: str = sys.executable,
                 wrapper: tuple[str, ...] = ()):
        self.request, self.run_dir, self.timeout_s, self.python = request, run_dir, timeout_s, python
        self.wrapper = wrapper  # a profiler that starts the harness itself, e.g. ncu's command line
        self.warm = False  # whether this run was forked by a warm harness (tutor.warm)
        self.kept = False  # whether a ruler keeper answered it (tutor.warm.RulerKeeper)
        self.result: dict | None = None
        self._proc: subprocess.Popen | WarmProcess | None = None
        self._cancelled = threading.Event()
        self._nonce = secrets.token_hex(16)  # only events that carry it are the harness's own

    @property
    def log_path(self) -> Path:
        return self.run_dir / LOG_NAME

    def cancel(self) -> None:
        """Kill the workload (safe from another thread)."""
        self._cancelled.set()
        self._kill()

    def _kill(self) -> None:
        """SIGTERM first: the harness then ends what learner code started outside its process group
        (a daemon in a session of its own); SIGKILL whatever is left a moment later."""
        if self._proc and self._proc.poll() is None:
            try:
                os.killpg(self._proc.pid, signal.SIGTERM)
                self._proc.wait(TERM_GRACE_S)
            except (ProcessLookupError, subprocess.TimeoutExpired):
                pass
        if self._proc and self._proc.poll() is None:
            try:
                os.killpg(self._proc.pid, signal.SIGKILL)
            except ProcessLookupError:
                pass

    def _spawn(self) -> int:
        self.run_dir.mkdir(parents=True, exist_ok=True)
        build_locks.clear_stale(self.request.get("caches", {}))
        if self.request.get("device") == "cuda" and not self.request.get("keeper"):
            release_kept_rulers()  # a watch session's kept ruler would hold the GPU open beside this run
        self._started = time.time() - 1.0  # a second early: a file's mtime may round below time.time()
        request_path = self.run_dir / "request.json"
        # Whole or absent, for whoever reads the run folder while the run starts (the TUI, a test).
        partial = request_path.with_suffix(".json.partial")
        partial.write_text(json.dumps(self.request, indent=1))
        os.replace(partial, request_path)
        read_fd, write_fd = os.pipe()
        nonce_read, nonce_write = os.pipe()
        os.write(nonce_write, self._nonce.encode())
        os.close(nonce_write)
        env = harness_environment()
        with self.log_path.open("wb") as log:
            # A profiler that starts the harness itself (ncu, nsys) needs a process of its own.
            mode = "off" if self.wrapper else warm_mode()
            if mode != "off" and self.request.get("keeper"):  # a watch session's quick check: its kept ruler
                keeper = Path(self.request["keeper"])
                self._proc = RulerKeeper(keeper, keeper.with_suffix(".log")).spawn(
                    [str(request_path)], env, self.run_dir, log.fileno(), write_fd, nonce_read, wait=False)
                self.kept = self._proc is not None
            if mode != "off" and self._proc is None:
                self._proc = WarmHarness.for_env(env).spawn([str(request_path)], env, self.run_dir, log.fileno(),
                                                            write_fd, nonce_read)
                if self._proc is None and mode == "require":
                    os.close(write_fd)
                    os.close(nonce_read)
                    os.close(read_fd)
                    raise RunFailed("harness_bug", "INFPROF_WARM=require and no warm harness is ready for this run.")
            self.warm = self._proc is not None
            if self._proc is None:
                self._proc = subprocess.Popen(
                    [*self.wrapper, self.python, "-m", "tutor.harness", str(request_path)],
                    stdin=subprocess.DEVNULL, stdout=log, stderr=subprocess.STDOUT, pass_fds=(write_fd, nonce_read),
                    # Under a profiler's wrapper the harness's parent is the profiler, not this process.
                    env={**env, EVENT_FD_ENV: str(write_fd), NONCE_FD_ENV: str(nonce_read),
                         **({} if self.wrapper else {CALLER_PID_ENV: str(os.getpid())})},
                    start_new_session=True, cwd=self.run_dir,
                )
        os.close(write_fd)
        os.close(nonce_read)
        return read_fd

    def events(self) -> Iterator[dict]:
        """Yield progress events; raise RunFailed for every way the run can fail."""
        read_fd = self._spawn()
        deadline = time.monotonic() + self.timeout_s
        error: dict | None = None
        buffer = b""
        timed_out = False
        with selectors.DefaultSelector() as sel, os.fdopen(read_fd, "rb", buffering=0) as pipe:
            sel.register(pipe, selectors.EVENT_READ)
            while True:
                remaining = deadline - time.monotonic()
                if remaining <= 0:
                    timed_out = True
                    self._kill()
                    break
                if not sel.select(timeout=min(remaining, 0.5)):
                    continue
                chunk = pipe.read(65536)
                if not chunk:
                    break  # the child closed the pipe: it exited
                buffer += chunk
                *lines, buffer = buffer.split(b"\n")
                for line in lines:
                    event = self._parse(line)
                    if event is None:
                        continue
                    if event["type"] == "result":
                        self.result = event["data"]
                    elif event["type"] == "error":
                        error = event
                    else:
                        yield event
        returncode = self._proc.wait()
        if timed_out or returncode != 0:  # stopped or died, maybe mid-build: its locks would hang the next run
            build_locks.clear_left_by_run(self.request.get("caches", {}), self._started)
        self._raise_if_failed(returncode, error, timed_out)

    def _parse(self, line: bytes) -> dict | None:
        if not line.strip():
            return None
        try:
            event = decode(line)
        except ValueError:
            return None  # not ours; never trust it
        return event if event.get("nonce") == self._nonce else None  # written by someone else: a forgery

    def _raise_if_failed(self, returncode: int, error: dict | None, timed_out: bool) -> None:
        tail = output_tail(self.log_path)
        if self._cancelled.is_set():
            raise RunFailed("cancelled", "Run cancelled.", tail)
        if timed_out:
            raise RunFailed("timeout", f"The workload did not finish within {self.timeout_s:.0f} s and was stopped.", tail)
        if error is not None:
            kind = error.get("kind", "bad_request")
            what = ERROR_KINDS.get(kind, kind)
            cls = RunFailedEnvironment if kind in ENVIRONMENT_KINDS else RunFailed
            # The harness's output says no more than its message when no GPU is visible.
            raise cls(kind, f"{what}: {error.get('message', '')}", "" if kind == "no_gpu" else tail,
                      error.get("where", ""))
        if returncode != 0 or self.result is None:
            if returncode < 0:
                why = death_words(signal.Signals(-returncode).name)
            else:
                why = f"exited with code {returncode} without a result"
            raise RunFailed("crashed", f"The workload process {why}.", tail)


class RunFailedEnvironment(RunFailed, EnvironmentProblem):
    """A run that failed because this machine cannot run it (exit code 2, not a wrong answer)."""


def run_harness(request: dict, run_dir: Path, timeout_s: float,
                on_event: Callable[[dict], None] | None = None,
                register: Callable[[HarnessRun], None] | None = None, wrapper: tuple[str, ...] = ()) -> RunOutcome:
    """Run to completion, passing progress events to `on_event`; `register` receives the run (for cancel)."""
    run = HarnessRun(request, run_dir, timeout_s, wrapper=wrapper)
    if register:
        register(run)
    start = time.monotonic()
    for event in run.events():
        if on_event:
            on_event(event)
    (run_dir / RESULT_NAME).write_text(json.dumps(run.result))
    return RunOutcome(result=run.result, run_dir=run_dir, wall_s=time.monotonic() - start, warm=run.warm,
                      kept=run.kept)
