"""How long the test command (README, docs/development.md) takes on a fresh clone: wall time and the whole machine's CPU.

    .venv/bin/python benchmarks/suite_time.py [--repeat N] [--commit REF] [--keep-cache] [--json]

Clones this repository (its committed HEAD, or REF) into a temporary folder, links this checkout's .venv into it
(the set-up is not what is timed; `make .venv/.installed` first), runs `make test` there with an empty user cache
folder, as on a fresh machine such as CI's (XDG_CACHE_HOME: the bytecode the harness keeps, tutor.warm; --keep-cache
uses this user's), and reads the machine's busy time around it from /proc/stat (user, nice, system, irq and softirq
of every core: the runs the suite forks count too, wherever they run). Run nothing else meanwhile: whatever else
the machine does counts. Each run is set beside the CPU of `import torch` just before it and just after: how fast
the machine was then (a run between two that differ saw the machine change under it). Linux only.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from suite_cpu import busy_seconds  # noqa: E402 - the machine's busy time, read as the per-test plugin reads it

ROOT = Path(__file__).resolve().parent.parent


def summary_line(output: str) -> str:
    """pytest's last line of counts ("1570 passed, 224 skipped in 298.40s"), without its = rulers."""
    counted = [line for line in output.splitlines() if re.search(r"\d+ (passed|failed|errors?)\b", line)]
    return counted[-1].strip("= ") if counted else "no summary"


def torch_import_cpu_s(python: Path, times: int = 3) -> float:
    """The median CPU of `import torch` in a fresh interpreter, now: how fast this machine is at the moment (the
    2-core machines differ from hour to hour by more than a suite's changes do; set each run beside it)."""
    took = []
    for _ in range(times):
        done = subprocess.run([str(python), "-c", "import resource, torch; r = resource.getrusage(0); "
                               "print(r.ru_utime + r.ru_stime)"], capture_output=True, text=True, check=True)
        took.append(float(done.stdout))
    return sorted(took)[len(took) // 2]


def time_once(commit: str, keep_cache: bool) -> dict:
    venv = ROOT / ".venv"
    if not (venv / ".installed").exists():
        raise SystemExit("no .venv here: run `make .venv/.installed` first")
    # A process the suite left running may still write into the clone's cache as it is removed: left_running names
    # it, and the clone goes as far as it can.
    with tempfile.TemporaryDirectory(prefix="suite-time-", ignore_cleanup_errors=True) as tmp:
        clone = Path(tmp) / "clone"
        subprocess.run(["git", "clone", "-q", str(ROOT), str(clone)], check=True)
        subprocess.run(["git", "checkout", "-q", commit], cwd=clone, check=True)
        (clone / ".venv").symlink_to(venv)
        (venv / ".installed").touch()  # newer than the clone's pyproject.toml: make installs nothing
        env = dict(os.environ)
        if not keep_cache:
            env["XDG_CACHE_HOME"] = str(Path(tmp) / "cache")
        torch_s = torch_import_cpu_s(venv / "bin" / "python")
        busy, start = busy_seconds(), time.monotonic()
        done = subprocess.run(["make", "test"], cwd=clone, env=env, capture_output=True, text=True)
        wall, cpu = time.monotonic() - start, busy_seconds() - busy
        left = left_running(f"XDG_CACHE_HOME={Path(tmp) / 'cache'}")
        torch_after_s = torch_import_cpu_s(venv / "bin" / "python")
        head = subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=clone, capture_output=True,
                              text=True).stdout.strip()
    return {"commit": head, "exit": done.returncode, "wall_s": round(wall, 1), "machine_cpu_s": round(cpu),
            "summary": summary_line(done.stdout), "cores": os.cpu_count(), "fresh_cache": not keep_cache,
            "torch_import_cpu_s": round(torch_s, 2), "torch_import_cpu_s_after": round(torch_after_s, 2),
            "failed": [line for line in done.stdout.splitlines() if line.startswith(("FAILED", "ERROR"))],
            "left_running": left}


def left_running(marker: str) -> list[str]:
    """The command lines of the processes still running whose environment holds `marker` (the suite's own)."""
    found = []
    for proc in Path("/proc").iterdir():
        try:
            if proc.name.isdigit() and marker.encode() in (proc / "environ").read_bytes().split(b"\0"):
                found.append((proc / "cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace").strip())
        except OSError:  # it ended meanwhile, or is not ours to read
            continue
    return found


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=1)
    parser.add_argument("--commit", default="HEAD")
    parser.add_argument("--keep-cache", action="store_true", help="this user's cache folder, not an empty one")
    parser.add_argument("--json", action="store_true", help="one JSON object a run")
    args = parser.parse_args(argv)
    failed = False
    for _ in range(args.repeat):
        run = time_once(args.commit, args.keep_cache)
        failed |= run["exit"] != 0
        if args.json:
            print(json.dumps(run), flush=True)
        else:
            minutes, seconds = divmod(run["wall_s"], 60)
            cache = "an empty cache folder" if run["fresh_cache"] else "this user's cache folder"
            print(f"{run['commit']}: {minutes:.0f} min {seconds:.0f} s, {run['machine_cpu_s']} core-seconds of the "
                  f"machine ({run['cores']} cores; import torch {run['torch_import_cpu_s']} s of CPU just before, "
                  f"{run['torch_import_cpu_s_after']} s just after), "
                  f"{cache}: {run['summary']}", flush=True)
            for line in run["failed"]:
                print(f"  {line}", flush=True)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
