"""benchmarks/loop_clocks.py's reading of tiers (the clocks themselves need a GPU): the tier a workload's median
speed-ups reach against a puzzle's call-clock bars over the workloads timed, and the tier puzzle.toml expects."""

from __future__ import annotations

from pathlib import Path

from tutor.catalog import get_puzzle
from tutor.harness.loading import load_module

CLOCKS = load_module(Path(__file__).parents[1] / "benchmarks" / "loop_clocks.py", "loop_clocks", ())


def test_a_tier_is_reached_where_every_call_clock_bar_over_a_timed_workload_is_cleared():
    puzzle4 = get_puzzle("puzzle4")  # bronze 1.1x, silver 2x, gold 2.8x, all on the call clock over the baseline
    assert [CLOCKS.tier_reached(puzzle4, {"baseline": s}) for s in (1.0, 1.5, 2.5, 4.8)] == [
        "", "bronze", "silver", "gold"]
    puzzle1 = get_puzzle("puzzle1")  # gold needs 1.5x over bf16_eager on the call clock, silver is the GPU clock's
    assert CLOCKS.tier_reached(puzzle1, {"baseline": 3.5}) == "bronze"  # bf16_eager not timed: gold not read
    assert CLOCKS.tier_reached(puzzle1, {"baseline": 3.5, "bf16_eager": 1.6}) == "gold"
    assert CLOCKS.tier_reached(puzzle1, {"baseline": 2.0, "bf16_eager": 1.6}) == ""


def test_the_expected_tier_is_the_references_highest_and_an_alternatives_own():
    puzzle4 = get_puzzle("puzzle4")
    assert CLOCKS.expected_tier(puzzle4, "reference") == "gold"
    assert CLOCKS.expected_tier(puzzle4, "alternatives/compiled_chunks") == puzzle4.alternatives["compiled_chunks"]
    assert CLOCKS.expected_tier(puzzle4, "baseline") == ""
