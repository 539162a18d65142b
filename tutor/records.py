"""What the learner has on record for one puzzle, read from the progress db for the results views and the CLI.

Read-only: the latest verdict, every attempt (for the history plot), and the
newest baseline and mine profile from each profiler (for metrics, kernels, the
side-by-side and the trace).
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path

from tutor.catalog import Puzzle
from tutor.grading.verdict import Criterion, Verdict
from tutor.metrics import ProfileMetrics
from tutor.progress import Progress
from tutor.workspace import Workspace

# The figures that answer "busy or idle, how many launches, how much memory" at a glance, in order.
KEY_FIGURES: tuple[tuple[str, str], ...] = (
    ("cpu.time_per_iter_us", "host time"),
    ("cpu.ops_per_iter", "aten ops"),
    ("cpu.allocs_per_iter", "allocations"),
    ("gpu.time_per_iter_us", "kernel time"),
    ("gpu.busy_fraction", "GPU busy"),
    ("gpu.idle_us_per_iter", "GPU idle"),
    ("kernels.per_iter", "launches"),
    ("launch.latency_us_median", "launch latency"),
    ("sync.calls_per_iter", "syncs"),
    ("graphs.replays_per_iter", "graph replays"),
    ("memory.peak_allocated_mb", "peak allocated"),
    ("memory.peak_reserved_mb", "peak reserved"),
    # A kernel profiler's (tutor.profilers.registry): the kernel with the most GPU time.
    ("ncu.duration_us", "duration"),
    ("ncu.sm_throughput_pct", "SM throughput"),
    ("ncu.memory_throughput_pct", "memory throughput"),
    ("ncu.achieved_occupancy_pct", "occupancy"),
    ("ncu.registers_per_thread", "registers"),
    # The memory profiler's (the allocator's history).
    ("allocator.allocated_mb_per_iter", "allocated a call"),
    ("allocator.allocs_per_iter", "allocations a call"),
    ("allocator.warmup.peak_allocated_mb", "peak in warm-up"),
    ("allocator.iterations.peak_allocated_mb", "peak in the calls"),
    ("allocator.graph_pool_mb", "graph pools"),
    # The compiler's (ptxas), per kernel source.
    ("ptxas.spill_store_bytes", "spill stores"),
    ("ptxas.spill_load_bytes", "spill loads"),
    ("ptxas.max_registers", "registers"),
    ("ptxas.max_stack_frame_bytes", "stack frame"),
)
# The few of them a timeline's headline shows, by where the profile ran (a profiler may name its own:
# tutor.profilers.registry).
HEADLINE = {"cuda": ("gpu.busy_fraction", "gpu.idle_us_per_iter", "kernels.per_iter", "sync.calls_per_iter",
                     "memory.peak_reserved_mb"),
            "cpu": ("cpu.time_per_iter_us", "cpu.ops_per_iter", "cpu.allocs_per_iter")}
TOP_KERNELS = 5  # a breakdown by kernel (a kernel profiler's has no categories) shows these and "other"


@dataclass(frozen=True)
class Attempt:
    number: int  # 1 for the learner's first attempt at this puzzle
    passed: bool
    tier: str
    speedup: float | None  # median vs the first tier's reference
    speedup_low: float | None
    mine_ms: float | None  # the learner's median time, the key metric of a grade
    failure: str = ""  # why the run did not finish, when it did not


@dataclass(frozen=True)
class ProfileRecord:
    workload: str  # baseline / mine
    metrics: ProfileMetrics
    trace_path: Path  # what the profiler wrote: a Chrome trace (torch) or a report (ncu, nsys)
    code_hash: str
    recorded: bool = False  # the puzzle's recording opened in study mode, not a profile the learner ran

    @property
    def profiler(self) -> str:
        return self.metrics.profiler


@dataclass
class PuzzleRecord:
    attempts: list[Attempt] = field(default_factory=list)
    verdict: Verdict | None = None  # the latest attempt that was graded
    profiles: list[ProfileRecord] = field(default_factory=list)  # newest first; one per workload and profiler

    @property
    def latest(self) -> Attempt | None:
        return self.attempts[-1] if self.attempts else None

    def profile(self, workload: str, profiler: str | None = None) -> ProfileRecord | None:
        """The newest `workload` profile by `profiler` (by any profiler when None)."""
        return next((p for p in self.profiles if p.workload == workload and profiler in (None, p.profiler)), None)

    def profilers(self) -> list[str]:
        """The profilers that have a profile on record, the most recently used first."""
        return list(dict.fromkeys(p.profiler for p in self.profiles))


def verdict_from_dict(data: dict) -> Verdict:
    criteria = [Criterion(c["name"], c["passed"], c["summary"], list(c.get("details", [])), c.get("caps_tier", ""))
                for c in data["criteria"]]
    return Verdict(data["puzzle"], criteria, data.get("tier", ""), data.get("speedups", {}),
                   data.get("timings_ms", {}), data.get("next_hint", ""), gpu_speedups=data.get("gpu_speedups", {}))


def load_record(ws: Workspace, puzzle: Puzzle) -> PuzzleRecord:
    progress = Progress(ws.db_path)
    record = PuzzleRecord()
    for number, row in enumerate(progress.attempts(puzzle.id), start=1):
        data = json.loads(row["verdict_json"] or "{}")
        failure = f"{data['error']}: {data.get('message', '')}" if "error" in data else ""
        if "criteria" in data:
            record.verdict = verdict_from_dict(data)
        record.attempts.append(Attempt(number, bool(row["passed"]), row["tier"] or "", row["speedup"],
                                       row["speedup_low"], data.get("timings_ms", {}).get("mine"), failure))
    rows = [row for workload in ("baseline", "mine") for row in progress.latest_profiles(puzzle.id, workload)]
    # Without a baseline profile of their own, a learner who studied sees the recording (study mode).
    own = {row["profiler"] for row in rows if row["workload"] == "baseline"}
    rows += [row for row in progress.latest_profiles(puzzle.id, "baseline", source="recorded")
             if row["profiler"] not in own]
    for row in sorted(rows, key=lambda r: (r["created_at"], r["id"]), reverse=True):
        record.profiles.append(ProfileRecord(row["workload"], ProfileMetrics.from_json(row["metrics_json"]),
                                             Path(row["trace_path"]), row["code_hash"],
                                             recorded=row["source"] == "recorded"))
    return record


def category_shares(metrics: ProfileMetrics) -> dict[str, float]:
    """Share of GPU time per kernel category, largest first."""
    shares = {name.split(".")[2]: value for name, value in metrics.values.items()
              if name.startswith("kernels.category.") and name.endswith(".share")}
    return dict(sorted(shares.items(), key=lambda kv: -kv[1]))


def time_breakdown(metrics: ProfileMetrics) -> tuple[str, dict[str, float]]:
    """What the kernel-time bar shows: shares by category, or by kernel where the profiler has no categories."""
    shares = category_shares(metrics)
    if shares:
        return "share of GPU time by category (%)", shares
    kernels = sorted(metrics.kernels, key=lambda k: -(k.get("share") or 0))
    top: dict[str, float] = {}
    for k in kernels[:TOP_KERNELS]:  # two kernels can share a short name (other template arguments)
        top[k["name"]] = top.get(k["name"], 0.0) + (k.get("share") or 0.0)
    rest = sum(k.get("share") or 0.0 for k in kernels[TOP_KERNELS:])
    return "share of profiled kernel time by kernel (%)", {**top, **({"other": rest} if rest else {})}


def compare_rows(baseline: ProfileMetrics | None, mine: ProfileMetrics | None) -> list[tuple[str, float | None, float | None]]:
    """(metric, baseline value, mine value) for every metric either profile has, key figures first."""
    b = baseline.values if baseline else {}
    m = mine.values if mine else {}
    key_order = [name for name, _ in KEY_FIGURES]
    names = sorted(set(b) | set(m), key=lambda n: (key_order.index(n) if n in key_order else len(key_order), n))
    return [(n, b.get(n), m.get(n)) for n in names if n != "iterations"]

