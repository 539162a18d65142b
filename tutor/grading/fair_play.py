"""Fair play: whatever the harness caught a workload doing to the grader (tutor/harness/guard.py).

Shown only when something was caught: a clean run adds no criterion.
"""

from __future__ import annotations

from tutor.grading.verdict import Criterion

ADVICE = ("forward() must compute its own output, on the thread that calls it, and leave the harness, "
          "its timers, torch, the other workloads and the tutor's files as they are.")


def check_fair_play(violations) -> list[Criterion]:
    if not violations:
        return []
    return [Criterion("fair play", False, "Your workload interfered with the grader: its numbers cannot count.",
                      [*violations, ADVICE])]
