"""The versioned protocol between the tutor and the harness subprocess.

The harness writes one JSON object per line to a pipe the tutor hands it
(never stdout: learner code may print). Every event carries the run's nonce, which
the tutor sends through a second pipe the harness reads and closes before any
learner code loads: a workload that finds the event pipe still cannot forge a
result the tutor accepts. Event types:
  stage    {"stage": name, "detail": str}
  progress {"stage": name, "done": int, "total": int}
  result   {"data": {...}}
  error    {"kind": ErrorKind, "message": str, "where": str, "traceback": str}
"""

from __future__ import annotations

import json
import re
from pathlib import Path

PROTOCOL_VERSION = 2
EVENT_FD_ENV = "INFPROF_EVENT_FD"
NONCE_FD_ENV = "INFPROF_NONCE_FD"
CALLER_PID_ENV = "INFPROF_CALLER_PID"  # the tutor process that started a cold run: the run ends if it dies
TERM_GRACE_S = 3.0  # between SIGTERM and SIGKILL when a run is stopped (tutor.runner, tutor.harness.zygote)

# The ranges the harness opens, which the profiles' readers select by. The torch profiler's
# record_function around each profiled forward(); NVTX ranges (Device.range) are `infprof.<phase>`,
# with a dot: ncu's --nvtx-include reads "/" as nesting.
TORCH_ITER_RANGE = "infprof:iter"
NVTX_PREFIX = "infprof."
NVTX_ITER_RANGE = NVTX_PREFIX + "iter"  # one per profiled forward(), for Nsight Systems
NVTX_KERNELS_RANGE = NVTX_PREFIX + "kernels"  # the calls Nsight Compute profiles

# "replaying": a serving grade's pairs of replays (tutor.harness.serving_rounds), in place of checking and timing.
STAGES = ("starting", "importing", "preparing", "warmup", "checking", "timing", "replaying", "profiling", "extracting",
          "grading")
# Whose a stage is, as a stage's detail begins (tutor.harness.lockstep), in the learner's words.
WHO = {"ruler": "the puzzle's workloads", "candidate": "your workload"}

# What went wrong inside the harness, in the learner's terms.
ERROR_KINDS = {
    "bad_request": "the tutor sent a request the harness cannot read",
    "harness_bug": "the harness itself failed",
    "no_gpu": "this puzzle needs a CUDA GPU and none is visible",
    "missing_package": "a package the workload imports is not installed",
    "import_error": "a workload file failed to load",
    "bad_workload": "a workload file lacks prepare() or forward()",
    "workload_error": "a workload raised an exception",
    "tampered": "a workload changed what the harness's own work runs",
    "oom": "the workload ran out of GPU memory",
    "crashed": "a workload process died",
}

# The memory profiler's phases: the harness runs each through a function of this name, so every
# allocation's Python stack in the allocator's history says its phase (tutor.harness.memory_history
# records, tutor.profilers.memory_snapshot reads).
MEMORY_PHASES = {"infprof_phase_prepare": "prepare", "infprof_phase_warmup": "warmup",
                 "infprof_phase_iterations": "iterations"}


def death_words(signal_name: str) -> str:
    """How a workload process that a signal ended died, in the learner's words."""
    return "was killed (out of host memory?)" if signal_name == "SIGKILL" else f"crashed with {signal_name}"


def encode(event_type: str, **fields) -> bytes:
    return (json.dumps({"v": PROTOCOL_VERSION, "type": event_type, **fields}) + "\n").encode()


def decode(line: bytes | str) -> dict:
    """Parse one event line; raises ValueError for anything that is not a v1 event."""
    event = json.loads(line)
    if not isinstance(event, dict) or event.get("v") != PROTOCOL_VERSION or "type" not in event:
        raise ValueError(f"not a protocol v{PROTOCOL_VERSION} event: {str(line)[:200]}")
    return event


def peaks_file(folder: str | Path, gpu_name: str) -> Path:
    """Where a GPU's best measured rates are kept (tutor.harness.peaks writes, doctor reads)."""
    return Path(folder) / f"{re.sub(r'[^A-Za-z0-9.-]+', '_', gpu_name)}.json"


def read_peaks(folder: str | Path, gpu_name: str) -> dict | None:
    """A GPU's best measured rates, or None before its first grade (or where the file is unreadable)."""
    try:
        return json.loads(peaks_file(folder, gpu_name).read_text())
    except (OSError, ValueError):
        return None
