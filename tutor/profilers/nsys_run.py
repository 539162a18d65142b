"""Nsight Systems: the command lines that run the harness under `nsys` and export its report to SQLite.

The report is a timeline of every CUDA API call, kernel, copy and NVTX range; the
harness's ranges (`infprof.<name>`) mark which calls are the measured ones, and
nsys_sqlite.extract reads the export. CPU sampling stays off (`--sample=none`): it adds
overhead and no metric reads it. Graph kernels are traced one by one
(`--cuda-graph-trace=node`), so a replayed CUDA graph still shows its kernels.
"""

from __future__ import annotations

import glob
import re
import shutil
import subprocess
from pathlib import Path

from tutor.errors import EnvironmentProblem, TutorError

REPORT_NAME = "profile"  # <run_dir>/profile.nsys-rep, then <run_dir>/profile.sqlite
SEARCH = ("/usr/local/cuda/bin/nsys", "/usr/local/cuda-*/bin/nsys", "/opt/nvidia/nsight-systems/*/bin/nsys",
          "/opt/nvidia/nsight-systems-cli/*/bin/nsys")
INSTALL = ("Install Nsight Systems from https://developer.nvidia.com/nsight-systems, or on Ubuntu/Debian "
           "`apt install nsight-systems-cli` from NVIDIA's CUDA repository, and put `nsys` on PATH.")


def find_nsys() -> str:
    """The nsys binary: on PATH, else the newest in the places NVIDIA's installers put it."""
    found = shutil.which("nsys")
    if not found:
        candidates = [p for pattern in SEARCH for p in glob.glob(pattern) if Path(p).is_file()]
        # By the numbers in the path: 2025.1.3 over 2024.10.1 over cuda-12.4, and any over an unversioned one.
        found = max(candidates, key=lambda p: [int(n) for n in re.findall(r"\d+", p)], default=None)
    if not found:
        raise EnvironmentProblem("Nsight Systems (nsys) is not installed on this machine.", INSTALL)
    return found


def report_path(run_dir: Path) -> Path:
    return Path(run_dir) / f"{REPORT_NAME}.nsys-rep"


def sqlite_path(run_dir: Path) -> Path:
    return Path(run_dir) / f"{REPORT_NAME}.sqlite"


def profile_command(nsys: str, run_dir: Path) -> list[str]:
    """The prefix that runs a program under nsys, writing <run_dir>/profile.nsys-rep (runner's `wrapper`)."""
    return [nsys, "profile", "--trace=cuda,nvtx,osrt", "--cuda-graph-trace=node", "--sample=none",
            "--output", str(Path(run_dir) / REPORT_NAME), "--force-overwrite", "true"]


def harness_command(nsys: str, run_dir: Path, python: str, request_path: Path) -> list[str]:
    """The whole command line: the harness under nsys, as HarnessRun would start it with that prefix."""
    return [*profile_command(nsys, run_dir), python, "-m", "tutor.harness", str(request_path)]


def export_command(nsys: str, run_dir: Path) -> list[str]:
    """Export <run_dir>/profile.nsys-rep to <run_dir>/profile.sqlite (overwriting an older export)."""
    return [nsys, "export", "--type", "sqlite", "--output", str(sqlite_path(run_dir)), "--force-overwrite", "true",
            str(report_path(run_dir))]


def export_sqlite(nsys: str, run_dir: Path, timeout_s: float = 300) -> Path:
    """Run the export; the SQLite file's path, or a TutorError saying why there is none."""
    report = report_path(run_dir)
    if not report.is_file():
        raise TutorError("Nsight Systems wrote no report.",
                         f"See {Path(run_dir) / 'output.log'}: nsys may have failed to start the harness.")
    try:
        done = subprocess.run(export_command(nsys, run_dir), capture_output=True, text=True, timeout=timeout_s)
    except subprocess.TimeoutExpired as exc:
        raise TutorError(f"nsys export did not finish within {timeout_s:.0f} s.",
                         f"Open {report.name} in nsys-ui instead.") from exc
    exported = sqlite_path(run_dir)
    if done.returncode != 0 or not exported.is_file():
        raise TutorError(f"nsys could not export {report.name} to SQLite.", "Open the report in nsys-ui to see what "
                         "it holds.", output_tail=(done.stdout + done.stderr)[-2000:])
    return exported
