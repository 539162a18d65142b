"""How a learner opens what each profiler wrote (a trace, a report) in that profiler's own viewer.

One `Opener` per profiler id: the file it writes (tutor.actions.PROFILERS stores its
path with the profile), the one-line shell command that opens it, and what to look
at first once it is open.
"""

from __future__ import annotations

import shlex
from dataclasses import dataclass
from pathlib import Path

from tutor.app.formatting import short_path

PERFETTO_SCRIPT = "https://github.com/google/perfetto/raw/main/tools/open_trace_in_ui"


@dataclass(frozen=True)
class Opener:
    noun: str  # what the file is called on screen: trace, report
    file_kind: str  # the profiler and the file's format
    viewer: str
    command_template: str  # {path}: the file, shell-quoted
    shell: str  # with what the command opens it
    gui: str  # how to open it without a shell
    remote: str  # what to do when the tutor runs on another machine
    look_for: tuple[str, ...]

    def command(self, path: Path | str) -> str:
        """The one line that opens `path` (written with ~ for the home folder, so it stays short)."""
        return self.command_template.format(path=shell_path(path))


OPENERS = {
    "torch": Opener(
        "trace", "PyTorch profiler, Chrome JSON", "Perfetto", f"curl -sL {PERFETTO_SCRIPT} | python3 - -i {{path}}",
        "with Perfetto's own script",
        "in a browser: https://ui.perfetto.dev → Open trace file",
        "on a remote machine add -n and forward the port: ssh -L 9001:127.0.0.1:9001 HOST",
        ("each forward() sits in an infprof:iter range: the metrics count only what is inside them",
         "gaps between kernels on the GPU rows are idle time; the host rows above them say why")),
    "ncu": Opener(
        "report", "Nsight Compute, .ncu-rep", "Nsight Compute", "ncu-ui {path}",
        "in Nsight Compute's GUI",
        "in Nsight Compute: File → Open File",
        "on a remote machine, copy the report to one with Nsight Compute: scp HOST:<path> .",
        ("one result per kernel launch inside the harness's infprof.kernels range (one forward())",
         "Details → GPU Speed Of Light: how close the kernel comes to the compute or the memory peak",
         "Occupancy and Launch Statistics: what limits the warps per SM (registers, shared memory, block)",
         "Warp State Statistics: the stall reasons say what the warps wait on")),
    "nsys": Opener(
        "report", "Nsight Systems, .nsys-rep", "Nsight Systems", "nsys-ui {path}",
        "in Nsight Systems' GUI",
        "in Nsight Systems: File → Open",
        "on a remote machine, copy the report to one with Nsight Systems: scp HOST:<path> .",
        ("the NVTX rows: each forward() sits in an infprof.iter range inside infprof.kernels",
         "gaps on the CUDA HW rows are idle GPU time; the CUDA API and OS runtime rows say why")),
}


def opener_for(profiler: str) -> Opener:
    """The profiler's opener; an unknown profiler's file is treated as a Chrome trace (torch's)."""
    return OPENERS.get(profiler, OPENERS["torch"])


def shell_path(path: Path | str) -> str:
    """`path` for a shell command line: ~ for the home folder (unquoted, so the shell expands it), the rest quoted."""
    short = short_path(path)
    if short.startswith("~/"):
        return "~/" + shlex.quote(short[2:])
    return shlex.quote(short)
