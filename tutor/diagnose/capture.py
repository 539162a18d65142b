"""`infprof-tutor diagnose`: profile a learner's own command (or a puzzle's workload) and diagnose that profile.

A command runs in a subprocess under the PyTorch profiler (tutor.diagnose.profiled), and with `kernels` under Nsight
Compute too; a puzzle's workload goes through the puzzle's own torch profile (tutor.actions.profile). Every report is
kept in the progress db with the run's folder.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

from tutor.actions import run_dir_named
from tutor.diagnose.host_time import host_time, host_time_of
from tutor.diagnose.report import Diagnosis, diagnose
from tutor.diagnose.rules import Profile
from tutor.errors import TutorError
from tutor.progress import Progress
from tutor.workspace import Workspace

ROOT = Path(__file__).resolve().parents[2]
TIMEOUT_S = 1800.0
KERNELS = 20  # launches ncu profiles: each replays a few dozen times
HEAVIEST = 3  # kernels, by GPU time in the torch profile, that --kernels targets


@dataclass
class Diagnosed:
    target: str
    diagnosis: Diagnosis
    run_dir: Path
    trace: Path


def diagnose_command(ws: Workspace, command: list[str], kernels: bool = False, marked: bool = False,
                     timeout_s: float = TIMEOUT_S, on_event=None) -> Diagnosed:
    """`command` is how the learner runs it: `python SCRIPT.py ARGS` or `python -m MODULE ARGS`."""
    python, rest = _python_command(command)
    if on_event:
        on_event({"type": "stage", "stage": "profiling", "detail": "your command under the PyTorch profiler"})
    run_dir = run_dir_named(ws, "diagnose")
    run_dir.mkdir(parents=True)
    trace = run_dir / "trace.json"
    wrapped = [python, "-m", "tutor.diagnose.profiled", str(trace), *(["--marked"] if marked else []), "--", *rest]
    _run(wrapped, run_dir / "command.log", timeout_s, "the PyTorch profiler")
    from tutor.profilers import torch_trace  # pandas loads only once a trace is read

    memory = _read_json(trace.with_name(trace.name + ".memory.json"))
    try:
        metrics = torch_trace.extract(trace, memory)
    except ValueError as e:
        raise TutorError(f"The profile of your command holds no profiled window: {e}",
                         "With --marked, wrap each step in torch.profiler.record_function(\"infprof:iter\"); "
                         "without it, the whole command is one window.") from e
    values = {**metrics.values, **host_time(trace)}
    notes = []
    if kernels:
        if on_event:
            on_event({"type": "stage", "stage": "profiling", "detail": "its heaviest kernels under Nsight Compute"})
        kernel_values, notes = _kernel_values(python, rest, run_dir, timeout_s, heaviest_kernels(metrics.kernels))
        values.update(kernel_values)
    whole = notes + ([] if marked else [
        "This profile is the whole command, its start-up included (CUDA's set-up, first calls, compiles, weights "
        "made): a host-bound start can hide the steady state. Wrap each step in torch.profiler.record_function("
        "\"infprof:iter\") and run with --marked to diagnose the steps alone."])
    profile = Profile(values, metrics.kernels, per="a step" if marked else "of the run")
    return _kept(ws, " ".join(command), profile, run_dir, trace, whole)


def diagnose_workload(ws: Workspace, puzzle_id: str, which: str, on_event=None) -> Diagnosed:
    """A workload in the puzzle contract (the learner's workload.py, or the puzzle's baseline), profiled as the
    puzzle profiles it."""
    from tutor import actions
    from tutor.catalog import get_puzzle

    outcome = actions.profile(ws, get_puzzle(puzzle_id), which, on_event)
    values = {**outcome.metrics.values, **host_time_of(outcome.trace_path)}
    return _kept(ws, f"{puzzle_id} ({which})", Profile(values, outcome.metrics.kernels), outcome.run_dir,
                 outcome.trace_path)


def _kept(ws: Workspace, target: str, profile: Profile, run_dir: Path, trace: Path,
          notes: list[str] = ()) -> Diagnosed:
    found = diagnose(profile)
    found.unclear += notes
    Progress(ws.db_path).record_workload_diagnosis(target, found.to_dict(), run_dir)
    return Diagnosed(target, found, run_dir, trace)


def _python_command(command: list[str]) -> tuple[str, list[str]]:
    if not command:
        raise TutorError("No command to diagnose.", "Give it after --: infprof-tutor diagnose -- python serve.py")
    first = Path(command[0]).name
    python, rest = ((command[0], command[1:]) if first.startswith("python") and len(command) > 1 else
                    (sys.executable, command) if command[0].endswith(".py") else (None, []))
    if python and rest[0] != "-m" and not Path(rest[0]).is_file():
        raise TutorError(f"No script at {rest[0]}.", "Give the path of the script you run, as you run it.")
    if python:
        return python, rest
    raise TutorError(f"diagnose runs Python commands; '{command[0]}' is not one.",
                     "Give the command as `python SCRIPT.py ARGS` or `python -m MODULE ARGS`.")


def _run(cmd: list[str], log: Path, timeout_s: float, under: str) -> None:
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(filter(None, [str(ROOT), os.environ.get("PYTHONPATH")]))}
    try:
        with log.open("w") as out:
            done = subprocess.run(cmd, stdout=out, stderr=subprocess.STDOUT, env=env, timeout=timeout_s)
    except subprocess.TimeoutExpired:
        raise TutorError(f"Your command ran past {timeout_s:.0f} s under {under} and was stopped.",
                         "Profile fewer steps (a few are enough), or pass --timeout.",
                         _tail(log)) from None
    except FileNotFoundError as e:
        raise TutorError(f"Could not start {cmd[0]}: {e.strerror}.", "Check the interpreter's path.") from None
    if done.returncode != 0:
        tail = _tail(log)
        advice = (f"{cmd[0]} has no torch: give the interpreter your workload runs with (your venv's python)."
                  if "No module named 'torch'" in tail else
                  f"Its output is in {log}; run it alone first and fix what it says.")
        raise TutorError(f"Your command failed under {under} (exit status {done.returncode}).", advice, tail)


def heaviest_kernels(kernels: list[dict], count: int = HEAVIEST) -> list[str]:
    """The `count` kernels that took the most GPU time in the torch profile, as names ncu can match (the last part
    of each short name, which a demangled name holds whole)."""
    ranked = sorted(kernels, key=lambda k: -(k.get("total_us") or 0.0))
    return list(dict.fromkeys(k["name"].split("::")[-1] for k in ranked if k.get("name")))[:count]


def kernel_filter(names: list[str]) -> list[str]:
    """ncu's options that profile only kernels whose demangled name holds one of `names`."""
    return ["--kernel-name-base", "demangled", "--kernel-name", "regex:" + "|".join(map(re.escape, names))]


def _kernel_values(python: str, rest: list[str], run_dir: Path, timeout_s: float,
                   heaviest: list[str]) -> tuple[dict[str, float], list[str]]:
    """Nsight Compute's figures of the command's heaviest kernels (its first ones where none of those matched), and
    a note of which it profiled."""
    from tutor.profilers import ncu

    found = ncu.find_usable_ncu()  # not installed, or counters kept for admins: an EnvironmentProblem that says so
    report, csv = run_dir / "kernels", run_dir / "kernels.csv"
    for names in ([heaviest] if heaviest else []) + [[]]:
        _run([*ncu.profile_command(found, report, KERNELS, only_range=None), *(kernel_filter(names) if names else []),
              python, *rest], run_dir / "ncu.log", timeout_s, "Nsight Compute")
        try:
            ncu.export_csv(found, report.with_suffix(".ncu-rep"), csv)
        except TutorError:
            continue  # no kernel matched: the first ones instead
        which = (f"the heaviest kernels ({', '.join(names)})" if names else
                 f"the command's first {KERNELS} kernels" + (" (none of its heaviest matched by name)" if heaviest
                                                             else ""))
        return ncu.extract(csv).values, [f"Nsight Compute's figures (ncu.*) describe {which}."]
    raise TutorError("Nsight Compute profiled no kernel of your command.", f"Its output is in {run_dir / 'ncu.log'}.")


def _read_json(path: Path) -> dict:
    return json.loads(path.read_text()) if path.is_file() else {}


def _tail(log: Path, chars: int = 2000) -> str:
    return log.read_text(errors="replace")[-chars:] if log.is_file() else ""
