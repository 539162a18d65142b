"""TUI start-up: seconds from launching `infprof-tutor` (no arguments) to its first frame on a terminal.

    .venv/bin/python benchmarks/tui_startup.py [--runs 7]

Each run starts the installed `infprof-tutor` command in a fresh process on a
pseudo-terminal of 80x24, on a throwaway workspace, and stops the clock when
the puzzle list (the text `puzzle0`) has been written to the terminal; then it
presses q. One more run, through the same entry point, records which modules
the process had loaded when it quit: torch and pandas must not be among them
(they load only when a run starts). Prints the median and the spread.

Target (issue 3): under 1 s on the 2-core machine, torch never imported.
"""

from __future__ import annotations

import argparse
import fcntl
import json
import os
import pty
import re
import select
import shutil
import statistics
import struct
import subprocess
import sys
import tempfile
import termios
import time
from pathlib import Path

COLUMNS, ROWS = 80, 24
MARKER = "puzzle0"  # the first puzzle of the browser: the real screen, not a blank first paint
TIMEOUT_S = 30.0
HEAVY = ("torch", "pandas", "numpy")
_ANSI = re.compile(r"\x1b\[[0-9;?<>=]*[ -/]*[@-~]|\x1b[PX^_].*?\x1b\\|\x1b\][^\x07]*(\x07|\x1b\\)|\x1b.", re.S)

# The console script's own body, plus a note of the modules loaded by the time the app quits.
ENTRY_WITH_MODULES = """
import atexit, json, sys
atexit.register(lambda: open({out!r}, "w").write(json.dumps(sorted(sys.modules))))
from tutor.cli import main
sys.exit(main())
"""


def first_frame_s(command: list[str], env: dict[str, str], cwd: Path) -> float:
    """Run `command` on a fresh 80x24 pty; seconds until MARKER is on screen. Quits it with q."""
    leader, follower = pty.openpty()
    fcntl.ioctl(follower, termios.TIOCSWINSZ, struct.pack("HHHH", ROWS, COLUMNS, 0, 0))
    start = time.perf_counter()
    proc = subprocess.Popen(command, stdin=follower, stdout=follower, stderr=follower, env=env, cwd=cwd,
                            start_new_session=True)
    os.close(follower)
    seen, elapsed = "", None
    try:
        while elapsed is None:
            if time.perf_counter() - start > TIMEOUT_S:
                raise SystemExit(f"no first frame within {TIMEOUT_S:.0f} s; the terminal showed:\n{seen[-2000:]}")
            ready, _, _ = select.select([leader], [], [], 0.05)
            if not ready:
                continue
            try:
                chunk = os.read(leader, 65536)
            except OSError:  # the process exited before drawing anything
                raise SystemExit(f"infprof-tutor exited early; the terminal showed:\n{seen[-2000:]}")
            seen += _ANSI.sub("", chunk.decode(errors="replace"))
            if MARKER in seen:
                elapsed = time.perf_counter() - start
        os.write(leader, b"q")
        _drain_until_exit(proc, leader)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
        os.close(leader)
    return elapsed


def _drain_until_exit(proc: subprocess.Popen, leader: int, timeout_s: float = 10.0) -> None:
    """Keep reading the terminal (a full pty blocks the app's writes) until the process ends."""
    deadline = time.monotonic() + timeout_s
    while proc.poll() is None and time.monotonic() < deadline:
        if select.select([leader], [], [], 0.05)[0]:
            try:
                os.read(leader, 65536)
            except OSError:
                break
    proc.wait(timeout=max(deadline - time.monotonic(), 0.1))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=7)
    args = parser.parse_args()

    command = shutil.which("infprof-tutor", path=str(Path(sys.executable).parent)) or shutil.which("infprof-tutor")
    if command is None:
        raise SystemExit("infprof-tutor is not installed in this environment (make run installs it).")
    with tempfile.TemporaryDirectory() as tmp:
        tmp = Path(tmp)
        env = {**os.environ, "HOME": str(tmp), "XDG_CONFIG_HOME": str(tmp / "config"), "TERM": "xterm-256color",
               "COLUMNS": str(COLUMNS), "LINES": str(ROWS)}
        env.pop("INFPROF_WORKSPACE", None)
        # The workspace the app opens: made by the CLI, as a learner would, in a folder of its own.
        subprocess.run([command, "init", str(tmp / "ws")], env=env, check=True, capture_output=True)
        ws = tmp / "ws"

        first_frame_s([command], env, ws)  # warms the OS file cache: every run after it is a warm start
        times = [first_frame_s([command], env, ws) for _ in range(args.runs)]

        modules_file = tmp / "modules.json"
        first_frame_s([sys.executable, "-c", ENTRY_WITH_MODULES.format(out=str(modules_file))], env, ws)
        loaded = set(json.loads(modules_file.read_text()))

    print(f"infprof-tutor, first frame at {COLUMNS}x{ROWS} ({os.cpu_count()} CPUs), {args.runs} runs:")
    print(f"  median {statistics.median(times):.3f} s  (min {min(times):.3f}, max {max(times):.3f})")
    print(f"  runs: {', '.join(f'{t:.3f}' for t in times)}")
    for name in HEAVY:
        print(f"  {name} imported: {'YES' if name in loaded else 'no'}")
    print(f"  target under 1 s without torch: {'met' if statistics.median(times) < 1 and 'torch' not in loaded else 'NOT met'}")


if __name__ == "__main__":
    main()
