"""A puzzle's recorded baseline (study mode's recordings) as one profile to diagnose: every profiler's metrics merged,
the host's time read from the torch trace, the torch profile's kernel table."""

from __future__ import annotations

from tutor.catalog import Puzzle
from tutor.diagnose.host_time import host_time_of
from tutor.diagnose.rules import Profile
from tutor.metrics import ProfileMetrics
from tutor.profilers.registry import TIMELINE
from tutor.study import read_recording, recorded_profilers


def recorded_profile(puzzle: Puzzle) -> Profile:
    values: dict[str, float] = {}
    kernels: list[dict] = []
    if puzzle.hardware.device == "cpu" and puzzle.recorded_baseline.is_file():  # recorded here, not for study mode
        recorded = ProfileMetrics.load(puzzle.recorded_baseline)
        values, kernels = dict(recorded.values), recorded.kernels
    for profiler in recorded_profilers(puzzle):
        metrics, opened = read_recording(puzzle, profiler)
        values.update(metrics.values)
        if profiler == TIMELINE:  # its kernel table, and its trace for the host's time
            kernels = metrics.kernels
            values.update(host_time_of(opened))
    return Profile(values, kernels)
