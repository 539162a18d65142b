"""The GPU's state around a timed run, read with nvidia-smi: which GPU, its clocks, and who else used it.

Read from the grade's coordinator, which never touches CUDA, before and after the timed
rounds. A grade timed while the clocks were held down (power or thermal capping) or while
another process ran on the GPU says so in its verdict: its figures may not repeat.
"""

from __future__ import annotations

import csv
import io
import shutil
import subprocess

GPU_FIELDS = ("name", "uuid", "driver_version", "clocks.sm", "clocks.mem", "clocks.max.sm",
              "temperature.gpu", "power.draw", "power.limit")
# Renamed in recent drivers; the old name is kept as an alias on most.
REASON_FIELDS = ("clocks_event_reasons.active", "clocks_throttle_reasons.active")
# nvmlClocksEventReasons bits that slow the GPU down (idle and application settings do not).
SLOWDOWNS = {0x4: "software power cap", 0x8: "hardware slowdown", 0x20: "software thermal slowdown",
             0x40: "hardware thermal slowdown", 0x80: "power brake"}
TIMEOUT_S = 10


def _query(args: list[str]) -> list[dict[str, str]] | None:
    binary = shutil.which("nvidia-smi")
    if not binary:
        return None
    try:
        out = subprocess.run([binary, *args, "--format=csv,nounits"], capture_output=True, text=True,
                             timeout=TIMEOUT_S, check=True).stdout
    except (OSError, subprocess.SubprocessError):
        return None
    return parse_csv(out)


def parse_csv(text: str) -> list[dict[str, str]]:
    """nvidia-smi's CSV (header row, then one row per GPU or process) as dicts keyed by the queried field."""
    rows = list(csv.reader(io.StringIO(text), skipinitialspace=True))
    if not rows:
        return []
    # Units go: "clocks.current.sm [MHz]" -> "clocks.current.sm" (nvidia-smi names clocks.sm so in its header).
    keys = [h.split(" [")[0].strip() for h in rows[0]]
    return [dict(zip(keys, (v.strip() for v in row))) for row in rows[1:] if row]


def snapshot(gpu_index: int = 0) -> dict:
    """The GPU's identity, clocks, temperature and power, its active slowdown reasons, and its compute processes."""
    rows = None
    for reasons in REASON_FIELDS:
        rows = _query([f"--id={gpu_index}", f"--query-gpu={','.join((*GPU_FIELDS, reasons))}"])
        if rows:
            break
    if not rows:
        return {}
    gpu = rows[0]
    state = {k.replace("clocks_throttle_reasons", "clocks_event_reasons"): v for k, v in gpu.items()}
    apps = _query([f"--id={gpu_index}", "--query-compute-apps=pid,process_name,used_memory"])
    state["compute_processes"] = apps if apps is not None else []
    return state


def slowdowns(state: dict) -> list[str]:
    """The active clock slowdown reasons in a snapshot, in words."""
    raw = state.get("clocks_event_reasons.active", "")
    try:
        bits = int(raw, 16)
    except ValueError:
        return []
    return [words for bit, words in SLOWDOWNS.items() if bits & bit]


def concerns(before: dict, after: dict, our_pids: set[int]) -> list[str]:
    """What about the GPU around the timed rounds may have moved the figures."""
    lines = []
    for when, state in (("before", before), ("after", after)):
        reasons = slowdowns(state)
        if reasons:
            lines.append(f"the GPU's clocks were held down {when} the timed rounds ({', '.join(reasons)}): "
                         "its figures may not repeat")
    listed = {int(app["pid"]): app.get("process_name", "?") for state in (before, after)
              for app in state.get("compute_processes", []) if app.get("pid", "").isdigit()}
    others = {pid: name for pid, name in listed.items() if pid not in our_pids}
    # In a container nvidia-smi may show the host's pids, none of them ours: then only a count says it was shared.
    visible_ours = bool(listed.keys() & our_pids)
    if others and visible_ours:
        names = ", ".join(f"{name} (pid {pid})" for pid, name in sorted(others.items()))
        lines.append(f"other processes had the GPU open while you were graded: {names} (any work they ran "
                     "shared the GPU with yours)")
    elif not visible_ours and max((len(s.get("compute_processes", [])) for s in (before, after)), default=0) > len(our_pids):
        lines.append("more processes had the GPU open than this grade started: it may have been shared")
    return lines


def summary(state: dict) -> str:
    """One line naming the GPU and its state, for the verdict."""
    if not state:
        return ""
    return (f"GPU: {state.get('name', '?')} ({state.get('uuid', '?')}), driver {state.get('driver_version', '?')}, "
            f"SM {state.get('clocks.current.sm', '?')} of {state.get('clocks.max.sm', '?')} MHz, "
            f"memory {state.get('clocks.current.memory', '?')} MHz, "
            f"{state.get('temperature.gpu', '?')} C, power limit {state.get('power.limit', '?')} W")
