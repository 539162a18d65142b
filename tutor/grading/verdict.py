"""What a grade says: one Criterion per check, and the Verdict over them."""

from __future__ import annotations

from dataclasses import asdict, dataclass, field


@dataclass
class Criterion:
    name: str  # correctness / diagnosis / performance / a puzzle-specific check
    passed: bool
    summary: str
    details: list[str] = field(default_factory=list)
    caps_tier: str = ""  # a passed criterion may still cap the tier (a fix that earns the first tier only)


@dataclass
class Verdict:
    puzzle: str
    criteria: list[Criterion]
    tier: str = ""
    speedups: dict[str, dict] = field(default_factory=dict)  # vs-workload -> {median, low, high, n}
    timings_ms: dict[str, float] = field(default_factory=dict)  # workload -> median ms
    next_hint: str = ""
    facts: dict = field(default_factory=dict)  # what the puzzle's spec reported about the run (puzzle3: GemLite's choice)
    gpu_speedups: dict[str, dict] = field(default_factory=dict)  # as `speedups`, on the GPU's time alone (CUDA)
    environment: dict = field(default_factory=dict)  # the GPU's identity and state around the timed rounds (CUDA)

    @property
    def passed(self) -> bool:
        return all(c.passed for c in self.criteria)

    def to_dict(self) -> dict:
        return {**asdict(self), "passed": self.passed}
