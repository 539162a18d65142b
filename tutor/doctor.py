"""`infprof-tutor doctor`: what this machine has for the puzzles, and each problem with its fix.

Read without importing torch (tutor.machine's probe, nvidia-smi, package metadata, the profilers'
`--version`), so it answers in a second even where torch is broken. The puzzles' "here" column in
the TUI and `list` comes from the same readiness code.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

from tutor.catalog import Puzzle
from tutor.grading.floor import link_rates
from tutor.machine import (CUDA_TORCH_FIX, GPU_EXTRAS_FIX, UNKNOWN_BUILD, Machine, Readiness, installed_version,
                           measured_peaks, readiness, requirement, this_machine, too_old, upgrade_command)
from tutor.profilers.registry import PROFILERS

# Compile caches, traces and ncu reports of a few grades; below this a grade may fail half-way.
LOW_DISK_GIB = 2.0
CGROUP = Path("/sys/fs/cgroup")  # cgroup v2: cpu.max is "<quota> <period>" or "max <period>"


@dataclass(frozen=True)
class Finding:
    area: str
    state: str  # "ok", "problem" (stops a puzzle this machine could run) or "note"
    detail: str
    fix: str = ""


@dataclass(frozen=True)
class PuzzleCheck:
    puzzle: Puzzle
    could_run: bool  # this machine has the hardware the puzzle needs
    ready: Readiness


@dataclass(frozen=True)
class Report:
    findings: tuple[Finding, ...]
    puzzles: tuple[PuzzleCheck, ...]

    @property
    def ok(self) -> bool:
        """Every puzzle whose hardware is here can run (a GPU puzzle without a GPU does not count)."""
        return all(c.ready.ok for c in self.puzzles if c.could_run) and \
            not any(f.state == "problem" for f in self.findings)


def could_run(puzzle: Puzzle, machine: Machine) -> bool:
    hw = puzzle.hardware
    if hw.device != "cuda":
        return True
    best = max(machine.compute_capabilities, default=None)
    return (machine.nvidia_driver and machine.gpu_count >= max(hw.gpus, 1)
            and (best is None or best >= hw.min_compute_capability))


def diagnose(puzzles: list[Puzzle], machine: Machine | None = None, disk_at: Path | None = None) -> Report:
    m = machine or this_machine()
    checks = tuple(PuzzleCheck(p, could_run(p, m), readiness(p, m)) for p in puzzles)
    runnable = [c.puzzle for c in checks if c.could_run]
    findings = [_python(), *_torch(m), *_gpus(m), *_profilers(m, puzzles, runnable),
                *_packages(m, puzzles, runnable), _cpus(), _disk(disk_at or Path.cwd())]
    return Report(tuple(findings), checks)


def _python() -> Finding:
    # The tutor itself runs, so its Python is new enough (pyproject's requires-python says >=3.11).
    return Finding("Python", "ok", f"{sys.version.split()[0]} at {sys.executable}")


def _torch(m: Machine) -> list[Finding]:
    if not m.torch_installed:
        return [Finding("PyTorch", "problem", "not installed in the tutor's environment",
                        "Reinstall: `make run` in the source tree, or `pip install torch`.")]
    version = installed_version("torch") or "unknown version"
    if m.torch_cuda == UNKNOWN_BUILD:
        return [Finding("PyTorch", "note", f"{version}: its version.py does not say which CUDA it was built for",
                        "Run `python -c \"import torch; print(torch.version.cuda, torch.cuda.is_available())\"`.")]
    if m.torch_cuda:
        return [Finding("PyTorch", "ok", f"{version}, a CUDA {m.torch_cuda} build")]
    if m.nvidia_driver:
        return [Finding("PyTorch", "problem", f"{version}, a CPU-only build, on a machine with an NVIDIA GPU",
                        CUDA_TORCH_FIX)]
    return [Finding("PyTorch", "ok", f"{version}, a CPU-only build: right for a machine without an NVIDIA GPU")]


def _gpus(m: Machine) -> list[Finding]:
    if not m.nvidia_driver:
        return [Finding("GPU", "note", "no NVIDIA driver (no nvidia-smi, no /proc/driver/nvidia): the CPU "
                        "puzzles run here, and `infprof-tutor study PUZZLE` opens every GPU puzzle's baseline as "
                        "profiled on an H100 or an H200")]
    if not m.gpus:
        return [Finding("GPU", "problem", f"an NVIDIA driver, {m.gpu_count} GPU(s), but nvidia-smi described none",
                        "Run `nvidia-smi`: its error says what is wrong with the driver.")]
    out = []
    for i, g in enumerate(m.gpus):
        cc = f"compute capability {g.compute_capability:g}" if g.compute_capability else "compute capability unknown"
        mem = f"{g.memory_gib:.0f} GiB" if g.memory_gib else "memory unknown"
        out.append(Finding(f"GPU {i}", "ok", f"{g.name}, {cc}, {mem}, driver {g.driver}; {_peaks_line(g.name)}"))
    return out


def _peaks_line(gpu_name: str) -> str:
    peaks = measured_peaks(gpu_name)
    if not peaks:
        return "its peak rates are measured by the first grade (the physical floor)"
    link = link_rates(peaks)
    return (f"measured at best {peaks['hbm_read_gbps'] / 1e3:.3g} TB/s from HBM and {peaks['bf16_tflops']:.0f} "
            f"TFLOP/s in bf16{link} over {peaks.get('runs', 1)} grade(s)")


def tool_version(tool: str) -> str:
    try:
        done = subprocess.run([tool, "--version"], capture_output=True, text=True, timeout=20)
    except (OSError, subprocess.SubprocessError):
        return "version unknown"
    # Nsight tools say 2025.3.1; nvcc says "release 13.0".
    match = re.search(r"\d{4}\.\d+(?:\.\d+)*|(?<=release )\d+\.\d+", done.stdout)
    return f"version {match.group(0)}" if match else "version unknown"


def _profilers(m: Machine, puzzles: list[Puzzle], runnable: list[Puzzle]) -> list[Finding]:
    out = []
    for pid, profiler in PROFILERS.items():
        if pid == "torch":
            continue  # part of torch, reported above
        users = [p.id for p in puzzles if pid in p.profilers]
        if not users:
            continue
        # A missing profiler stops a puzzle only where a grade reads its profiles.
        stops = [p.id for p in runnable if pid in p.grade_profilers]
        problem = profiler.problem(m)
        if problem:
            out.append(Finding(profiler.name, "problem" if stops else "note",
                               f"{problem.message} Used by {', '.join(users)}.", _fix(problem.advice, stops, m)))
        else:
            tool = profiler.find_tool(m)  # a path, or None for a profiler inside torch (the memory snapshot)
            out.append(Finding(profiler.name, "ok", f"{tool_version(tool)} at {tool}" if tool else
                               "part of PyTorch's CUDA build"))
    return out


def _fix(fix: str, stops, m: Machine) -> str:
    """Without a GPU, what only GPU puzzles use is worth a note, not a fix to follow."""
    return fix if stops or m.nvidia_driver else ""


def _packages(m: Machine, puzzles: list[Puzzle], runnable: list[Puzzle]) -> list[Finding]:
    out = []
    for package in sorted({pkg for p in puzzles for pkg in p.hardware.packages}):
        users = [p.id for p in puzzles if package in p.hardware.packages]
        stops = any(package in p.hardware.packages for p in runnable)
        version, wanted = installed_version(package), requirement(package)
        needs = f" (needs {wanted})" if wanted else ""
        if version is None:
            out.append(Finding(package, "problem" if stops else "note", f"not installed{needs}; used by {', '.join(users)}",
                               _fix(GPU_EXTRAS_FIX, stops, m)))
        elif old := too_old(package):
            out.append(Finding(package, "problem" if stops else "note", f"{old}; used by {', '.join(users)}",
                               _fix(f"Upgrade: {upgrade_command(package)}.", stops, m)))
        else:
            out.append(Finding(package, "ok", f"{version}{needs}"))
    return out


def cpu_quota(cgroup: Path = CGROUP) -> float | None:
    """The CPUs this container may use at once (cgroup v2 cpu.max), or None where nothing caps them."""
    try:
        quota, period = (cgroup / "cpu.max").read_text().split()[:2]
        return None if quota == "max" else int(quota) / int(period)
    except (OSError, ValueError):
        return None


def _cpus(cgroup: Path = CGROUP) -> Finding:
    visible, quota = len(os.sched_getaffinity(0)), cpu_quota(cgroup)
    detail = f"{visible} CPUs" + (f", a quota of {quota:g} (cgroup cpu.max)" if quota else "")
    if quota and quota < visible and "OMP_NUM_THREADS" not in os.environ:
        # torch starts a thread per visible CPU; past the quota the kernel pauses the whole group until the
        # next period, so a many-threaded host copy can stall for most of 100 ms.
        return Finding("CPUs", "note", f"{detail}: torch starts {visible} threads, and past the quota all of them "
                       "wait for the next period, so host-side work (copies, a CPU puzzle) can stall",
                       f"export OMP_NUM_THREADS={max(1, int(quota))} before starting the tutor")
    return Finding("CPUs", "ok", detail)


def _disk(path: Path) -> Finding:
    where = next((p for p in (path, *path.parents) if p.exists()), Path("/"))
    free = shutil.disk_usage(where).free / 2**30
    if free < LOW_DISK_GIB:
        return Finding("Disk", "problem", f"{free:.1f} GiB free at {where}",
                       f"Free at least {LOW_DISK_GIB:g} GiB: compile caches, traces and Nsight reports go to the "
                       "workspace's .infprof/ (delete old runs in .infprof/runs/).")
    return Finding("Disk", "ok", f"{free:.0f} GiB free at {where}")


def puzzle_state(check: PuzzleCheck) -> Finding:
    """One puzzle's line, in the findings' terms: ready, not for this machine (study it), or what stops it."""
    p = check.puzzle
    if check.ready.ok:
        return Finding(p.id, "ok", "ready")
    if not check.could_run:
        from tutor.study import recorded_card

        # What stops it first (the GPU), then all it needs: never a need that is met read as one that is missing.
        return Finding(p.id, "note", f"{check.ready.label} here; it needs {p.hardware.needs()}",
                       f"`infprof-tutor study {p.id}` opens its baseline as profiled on {recorded_card(p)}.")
    return Finding(p.id, "problem", check.ready.label, check.ready.why)
