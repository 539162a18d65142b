"""What the learner has on record for one puzzle, read from the progress db for the results views.

Read-only: the latest verdict, every attempt (for the history plot), and the
latest baseline and mine profiles (for metrics, kernels and the side-by-side).
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
)
# The few of them a headline shows, by where the profile ran.
HEADLINE = {"cuda": ("gpu.busy_fraction", "gpu.idle_us_per_iter", "kernels.per_iter", "sync.calls_per_iter",
                     "memory.peak_reserved_mb"),
            "cpu": ("cpu.time_per_iter_us", "cpu.ops_per_iter", "cpu.allocs_per_iter")}


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
    trace_path: Path
    code_hash: str


@dataclass
class PuzzleRecord:
    attempts: list[Attempt] = field(default_factory=list)
    verdict: Verdict | None = None  # the latest attempt that was graded
    baseline: ProfileRecord | None = None
    mine: ProfileRecord | None = None

    @property
    def latest(self) -> Attempt | None:
        return self.attempts[-1] if self.attempts else None

    def profile(self, workload: str) -> ProfileRecord | None:
        return self.baseline if workload == "baseline" else self.mine


def verdict_from_dict(data: dict) -> Verdict:
    criteria = [Criterion(c["name"], c["passed"], c["summary"], list(c.get("details", []))) for c in data["criteria"]]
    return Verdict(data["puzzle"], criteria, data.get("tier", ""), data.get("speedups", {}),
                   data.get("timings_ms", {}), data.get("next_hint", ""))


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
    for workload in ("baseline", "mine"):
        row = progress.latest_profile(puzzle.id, workload)
        if row:
            setattr(record, workload, ProfileRecord(workload, ProfileMetrics.from_json(row["metrics_json"]),
                                                    Path(row["trace_path"]), row["code_hash"]))
    return record


def category_shares(metrics: ProfileMetrics) -> dict[str, float]:
    """Share of GPU time per kernel category, largest first."""
    shares = {name.split(".")[2]: value for name, value in metrics.values.items()
              if name.startswith("kernels.category.") and name.endswith(".share")}
    return dict(sorted(shares.items(), key=lambda kv: -kv[1]))


def compare_rows(baseline: ProfileMetrics | None, mine: ProfileMetrics | None) -> list[tuple[str, float | None, float | None]]:
    """(metric, baseline value, mine value) for every metric either profile has, key figures first."""
    b = baseline.values if baseline else {}
    m = mine.values if mine else {}
    key_order = [name for name, _ in KEY_FIGURES]
    names = sorted(set(b) | set(m), key=lambda n: (key_order.index(n) if n in key_order else len(key_order), n))
    return [(n, b.get(n), m.get(n)) for n in names if n != "iterations"]


PERFETTO_SCRIPT = "https://github.com/google/perfetto/raw/main/tools/open_trace_in_ui"


def perfetto_command(trace_path: Path) -> str:
    """One line that serves the trace on 127.0.0.1:9001 and opens it in ui.perfetto.dev (Perfetto's own script)."""
    return f"curl -sL {PERFETTO_SCRIPT} | python3 - -i {trace_path}"
