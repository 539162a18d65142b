"""Nsight Compute: run the harness under `ncu`, then read its raw CSV page into ProfileMetrics.

Only kernels inside the NVTX range `infprof.kernels` are profiled (the harness
opens it around the measured calls, after warm-up), so compilation, autotuning
and warm-up launches are never replayed. Clocks are left alone (`--clock-control
none`): the GPU runs at the clocks the timing runs see. Caches are flushed
between replay passes (`--cache-control all`), so every kernel starts cold,
as in the timing runs.
"""

from __future__ import annotations

import glob
import os
import re
import shutil
import subprocess
from pathlib import Path

from tutor.errors import EnvironmentProblem, TutorError
from tutor.metrics import ProfileMetrics
from tutor.protocol import NVTX_KERNELS_RANGE

SECTIONS = ("SpeedOfLight", "Occupancy", "LaunchStats", "MemoryWorkloadAnalysis", "WarpStateStats",
            "ComputeWorkloadAnalysis")
# Counters no section above collects, asked for by name. Shared-memory bank conflicts (puzzle11): a warp's
# shared load takes one wavefront when its 32 addresses hit 32 banks, up to 32 when they hit one. Coalescing
# (puzzle12): a warp's global request of 32 neighbouring floats touches 4 sectors of 32 bytes, up to 32.
EXTRA_METRICS = ("l1tex__data_pipe_lsu_wavefronts_mem_shared_op_ld.sum",
                 "l1tex__data_bank_conflicts_pipe_lsu_mem_shared_op_ld.sum", "smsp__inst_executed_op_shared_ld.sum",
                 "l1tex__t_sectors_pipe_lsu_mem_global_op_ld.sum", "l1tex__t_requests_pipe_lsu_mem_global_op_ld.sum",
                 "l1tex__t_sectors_pipe_lsu_mem_global_op_st.sum", "l1tex__t_requests_pipe_lsu_mem_global_op_st.sum")
MAX_KERNELS = 200  # replaying every kernel ~40 times: keeps a profile within minutes
SEARCH = ("/usr/local/cuda/bin/ncu", "/opt/nvidia/nsight-compute/*/ncu", "/usr/local/NVIDIA-Nsight-Compute*/ncu")
INSTALL = ("Install Nsight Compute (it ships with the CUDA toolkit, or from "
           "https://developer.nvidia.com/nsight-compute) and put `ncu` on PATH; "
           "reading hardware counters may also need root or "
           "`NVreg_RestrictProfilingToAdminUsers=0` (see NVIDIA's ERR_NVGPUCTRPERM page).")

NVIDIA_PARAMS = Path("/proc/driver/nvidia/params")
COUNTERS_FIX = ("Run the tutor as root, or let every user read the counters: "
                "`echo 'options nvidia NVreg_RestrictProfilingToAdminUsers=0' | sudo tee "
                "/etc/modprobe.d/nvidia-profiling.conf`, then reboot.")

# Raw CSV column -> our short name. Each becomes ncu.<short> (top kernel) and a kernel-table column.
METRICS = {
    "gpu__time_duration.sum": "duration_us",
    "sm__throughput.avg.pct_of_peak_sustained_elapsed": "sm_throughput_pct",
    "gpu__compute_memory_throughput.avg.pct_of_peak_sustained_elapsed": "memory_throughput_pct",
    "gpu__dram_throughput.avg.pct_of_peak_sustained_elapsed": "dram_throughput_pct",
    "dram__bytes.sum.per_second": "dram_gbps",
    "lts__t_sector_hit_rate.pct": "l2_hit_rate_pct",
    "l1tex__t_sector_hit_rate.pct": "l1_hit_rate_pct",
    "sm__warps_active.avg.pct_of_peak_sustained_active": "achieved_occupancy_pct",
    "sm__maximum_warps_per_active_cycle_pct": "theoretical_occupancy_pct",
    "launch__registers_per_thread": "registers_per_thread",
    "launch__grid_size": "grid_size",
    "launch__block_size": "block_size",
    "launch__waves_per_multiprocessor": "waves_per_sm",
    "launch__shared_mem_per_block_static": "static_shared_bytes",
    "launch__shared_mem_per_block_dynamic": "dynamic_shared_bytes",
    "launch__occupancy_limit_registers": "occupancy_limit_registers",
    "launch__occupancy_limit_shared_mem": "occupancy_limit_shared_mem",
    "launch__occupancy_limit_warps": "occupancy_limit_warps",
    "launch__occupancy_limit_blocks": "occupancy_limit_blocks",
    "smsp__cycles_active.avg": "sm_active_cycles",
    # Instructions that store a register to local memory or load it back: register spills' cost, counted.
    "sass__inst_executed_register_spilling": "spill_instructions",
    # Threads doing work per warp instruction: 32 when no branch splits a warp (divergence lowers it).
    "smsp__thread_inst_executed_pred_on_per_inst_executed.ratio": "threads_per_instruction",
    # How busy L2's atomic units were, on average over the slices and on the busiest: atomics contended on a
    # few addresses queue at those addresses' slices, so the busiest is saturated while the average idles
    # (puzzle10's baseline on the H100: 83% against 1%).
    "lts__d_atomic_input_cycles_active.avg.pct_of_peak_sustained_elapsed": "l2_atomic_busy_pct",
    "lts__d_atomic_input_cycles_active.max.pct_of_peak_sustained_elapsed": "l2_atomic_busiest_pct",
    # Which of the SM's pipes did the work (ComputeWorkloadAnalysis), as a share of the cycles the SMs were active:
    # matrix products on fp32 operands run on the FMA pipe while the tensor pipe idles (puzzle24's baseline on
    # an H200: FMA 79%, tensor 0.0003%; TF32 allowed, 3% and 83%).
    "sm__pipe_tensor_cycles_active.avg.pct_of_peak_sustained_active": "tensor_pipe_pct",
    "sm__pipe_fma_cycles_active.avg.pct_of_peak_sustained_active": "fma_pipe_pct",
    # Shared loads (EXTRA_METRICS): the wavefronts they took and how many of those bank conflicts added.
    "l1tex__data_bank_conflicts_pipe_lsu_mem_shared_op_ld.sum": "shared_load_bank_conflicts",
    "l1tex__data_pipe_lsu_wavefronts_mem_shared_op_ld.sum": "shared_load_wavefronts",
    "smsp__inst_executed_op_shared_ld.sum": "shared_load_instructions",
    # Global loads and stores (EXTRA_METRICS): 32-byte sectors moved and warp-level requests made.
    "l1tex__t_sectors_pipe_lsu_mem_global_op_ld.sum": "global_load_sectors",
    "l1tex__t_requests_pipe_lsu_mem_global_op_ld.sum": "global_load_requests",
    "l1tex__t_sectors_pipe_lsu_mem_global_op_st.sum": "global_store_sectors",
    "l1tex__t_requests_pipe_lsu_mem_global_op_st.sum": "global_store_requests",
}
# Units ncu may report a metric in -> factor to ours: µs for time, bytes for sizes, GB/s for rates.
UNIT_SCALE = {"nsecond": 1e-3, "ns": 1e-3, "usecond": 1.0, "us": 1.0, "msecond": 1e3, "ms": 1e3, "second": 1e6,
              "byte": 1.0, "Kbyte": 1e3, "Mbyte": 1e6, "Gbyte": 1e9,
              "byte/s": 1e-9, "Kbyte/s": 1e-6, "Mbyte/s": 1e-3, "Gbyte/s": 1.0, "Tbyte/s": 1e3}
DERIVED = ("dram_bytes", "shared_wavefronts_per_load", "global_load_sectors_per_request",
           "global_store_sectors_per_request")
STALL_PREFIX = "smsp__average_warps_issue_stalled_"
STALL_SUFFIX = "_per_issue_active.ratio"


def find_ncu() -> str:
    found = shutil.which("ncu") or next((p for pat in SEARCH for p in sorted(glob.glob(pat))), None)
    if not found:
        raise EnvironmentProblem("Nsight Compute (ncu) is not installed on this machine.", INSTALL)
    return found


def counters_restricted(params: Path = NVIDIA_PARAMS) -> bool:
    """The driver keeps performance counters for admins and this process is not one (ncu would fail
    with ERR_NVGPUCTRPERM). False where the driver does not say (no /proc entry)."""
    try:
        restricted = re.search(r"^RmProfilingAdminOnly: 1$", params.read_text(), re.MULTILINE)
    except OSError:
        return False
    return bool(restricted) and os.geteuid() != 0


def find_usable_ncu() -> str:
    """ncu, where it can read the GPU's counters."""
    found = find_ncu()
    if counters_restricted():
        raise EnvironmentProblem("Nsight Compute cannot read this GPU's performance counters: the driver keeps "
                                 "them for admins (ERR_NVGPUCTRPERM).", COUNTERS_FIX)
    return found


def profile_command(ncu: str, report_base: Path, max_kernels: int = MAX_KERNELS,
                    only_range: str | None = NVTX_KERNELS_RANGE) -> list[str]:
    """The prefix that runs the harness under ncu, writing <report_base>.ncu-rep; the kernels inside the NVTX range
    `only_range` (a command of the learner's marks none: every kernel, up to `max_kernels`)."""
    within = ["--nvtx", "--nvtx-include", f"{only_range}/"] if only_range else []
    cmd = [ncu, *within, "--clock-control", "none",
           "--cache-control", "all", "--replay-mode", "kernel", "--launch-count", str(max_kernels),
           "--target-processes", "all", "--force-overwrite", "--export", str(report_base)]
    for section in SECTIONS:
        cmd += ["--section", section]
    return cmd + ["--metrics", ",".join(EXTRA_METRICS)]


def export_csv(ncu: str, report: Path, csv_path: Path, timeout_s: float = 300) -> None:
    """The report's raw page as CSV (one row per profiled kernel, every collected metric)."""
    done = subprocess.run([ncu, "--import", str(report), "--csv", "--page", "raw"],
                          capture_output=True, text=True, timeout=timeout_s)
    if done.returncode != 0 or not done.stdout.strip():
        raise TutorError(f"ncu could not read back {report.name}: {done.stderr.strip()[-500:]}",
                         "Open the report in Nsight Compute to see what it holds.")
    csv_path.write_text(done.stdout)


def extract(csv_path: Path) -> ProfileMetrics:
    """Kernel table and the top kernel's metrics from an `ncu --csv --page raw` export."""
    import pandas as pd

    # Only the columns read below: an export has 700-800, and parsing them all was most of the reading's time.
    wanted = {"ID", "Kernel Name", *METRICS}
    raw = pd.read_csv(csv_path, dtype=str, keep_default_na=False, comment=None,
                      usecols=lambda c: c in wanted or _is_stall(c))
    raw = raw[~raw["ID"].astype(str).str.startswith("==")]  # ncu's own log lines, if any slipped in
    units, rows = raw.iloc[0], raw.iloc[1:]  # the first row under the header holds each column's unit
    if rows.empty:
        raise TutorError("Nsight Compute profiled no kernels.",
                         f"Was any kernel launched inside the NVTX range {NVTX_KERNELS_RANGE}? "
                         "Profiling needs hardware counters: see `ncu --query-metrics`.")
    table = pd.DataFrame({"name": rows["Kernel Name"].map(_short_name), "full_name": rows["Kernel Name"]})
    for column, short in METRICS.items():
        if column in rows:
            # Launch figures come per block ("Kbyte/block"): the unit is the part before the slash.
            scale = UNIT_SCALE.get(str(units[column]).strip().removesuffix("/block"), 1.0)
            table[short] = _numbers(rows[column]) * scale
    if {"dram_gbps", "duration_us"} <= set(table.columns):
        table["dram_bytes"] = table["dram_gbps"] * 1e3 * table["duration_us"]  # GB/s x µs = kB
    # Per warp-level instruction or request; NaN for a kernel that makes none.
    for derived, part, whole in (("shared_wavefronts_per_load", "shared_load_wavefronts", "shared_load_instructions"),
                                 ("global_load_sectors_per_request", "global_load_sectors", "global_load_requests"),
                                 ("global_store_sectors_per_request", "global_store_sectors", "global_store_requests")):
        if {part, whole} <= set(table.columns):
            table[derived] = table[part] / table[whole].where(table[whole] > 0)
    # Warp stall reasons (cycles per issued instruction): the "why is it waiting" of a kernel.
    for column in rows.columns:
        if _is_stall(column):
            table["stall." + column.removeprefix(STALL_PREFIX).removesuffix(STALL_SUFFIX)] = _numbers(rows[column])
    return _metrics(table)


def _is_stall(column: str) -> bool:
    return column.startswith(STALL_PREFIX) and column.endswith(STALL_SUFFIX)


def _metrics(table) -> ProfileMetrics:
    """One row per kernel name; `values` describe the kernel with the most GPU time."""
    import pandas as pd

    by_name = table.groupby(["name", "full_name"], sort=False)
    kernels = by_name.agg("first")  # configs of one kernel name agree; take the first launch's
    kernels["count"] = by_name.size()
    kernels["total_us"] = by_name["duration_us"].sum()
    kernels["mean_us"] = kernels["total_us"] / kernels["count"]
    kernels["share"] = kernels["total_us"] / kernels["total_us"].sum()
    kernels = kernels.reset_index().sort_values("total_us", ascending=False)
    top = kernels.iloc[0]
    values = {"ncu.kernels_profiled": float(len(table)), "ncu.total_us": float(table["duration_us"].sum()),
              "ncu.duration_us": float(top["mean_us"])}
    for column in kernels.columns:
        if (column in METRICS.values() or column in DERIVED or column.startswith("stall.")) and column != "duration_us":
            if pd.notna(top[column]):
                values[f"ncu.{column}"] = float(top[column])
    records = kernels.drop(columns=["duration_us"]).to_dict("records")
    return ProfileMetrics(values=values, kernels=records, profiler="ncu", device="cuda")


def _numbers(column):
    import pandas as pd

    return pd.to_numeric(column.str.replace(",", "", regex=False), errors="coerce")


def _short_name(full: str) -> str:
    """`void ns::kernel<...>(args)` -> `ns::kernel`: readable, still unique enough to group by."""
    name = full.split("(")[0].split("<")[0].strip()
    return name.removeprefix("void ").strip() or full
