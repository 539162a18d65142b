"""The suite's own tools: the order it hands its tests out in (tests/conftest.py: the tests marked `first`, the
wheel's install, ahead of every other) and the plugin that counts each test's CPU (benchmarks/suite_cpu.py)."""

from __future__ import annotations


def test_the_tests_marked_first_lead(request):
    marked = [i.get_closest_marker("first") is not None for i in request.session.items]
    assert marked == sorted(marked, reverse=True)


def test_the_suite_cpu_plugin_reads_the_machines_busy_time_and_names_each_tests_share():
    """benchmarks/suite_cpu.py, where README's figures of the suite's CPU come from."""
    from pathlib import Path

    from tutor.harness.loading import load_module

    plugin = load_module(Path(__file__).parents[1] / "benchmarks" / "suite_cpu.py", "suite_cpu", ())
    before = plugin.busy_seconds()
    sum(i * i for i in range(2_000_000))  # some CPU of this process's own
    assert plugin.busy_seconds() > before > 0
    assert plugin.share("tests/test_runner.py::test_cancel_kills_the_workload[cold]") == "--also-cold's cold twins"
    assert plugin.share("tests/test_app.py::test_hints_are_revealed_one_at_a_time") == "the app's tests and snapshots"
    assert plugin.share("tests/test_puzzle9.py::test_ptxas_finds_the_baselines_spills[baseline.py-True]") == (
        "CUDA sources compiled for ptxas's counts")
    assert plugin.share("tests/test_puzzle4.py::test_no_table_answers_a_call") == "the puzzles' other tests"
    assert plugin.share("tests/test_cli.py::test_list") == "the rest"
    assert plugin.share("fc/tests/test_app.py::test_hints_are_revealed_one_at_a_time") == (
        "the app's tests and snapshots")  # run from a clone, whose folder pytest may name first


def test_grade_latency_sums_a_serving_grades_replays_by_side():
    """benchmarks/grade_latency.py's rows: a serving grade's replay stages (each names its side and replay) summed
    by side, the warm-up pair apart, so its table shows the puzzle's server's seconds against the learner's."""
    from pathlib import Path

    from tutor.harness.loading import load_module

    latency = load_module(Path(__file__).parents[1] / "benchmarks" / "grade_latency.py", "grade_latency", ())
    rows = [latency.stage_row("replaying", f"{who}: {which} of 512 requests")
            for which in ("warm-up replay", "replay 1", "replay 2") for who in ("the puzzle's workloads", "your workload")]
    assert rows == ["replaying, the puzzle's workloads (warm-up)", "replaying, your workload (warm-up)",
                    *["replaying, the puzzle's workloads", "replaying, your workload"] * 2]
    assert latency.stage_row("preparing", "baseline") == "preparing baseline"
    assert latency.stage_row("timing", "40 interleaved rounds") == "timing"
