"""Every benchmark a document cites runs as written: each answers --help (its imports and its arguments load), and
those that run on a CPU run here at a small size. A GPU benchmark's real run is its device call's to show."""

from __future__ import annotations

import importlib.util
import json
import re
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).parents[1]
DOCUMENTS = [ROOT / "README.md", ROOT / "challenges" / "README.md", *(ROOT / "docs").glob("*.md"),
             *(ROOT / "challenges").glob("*/MEASUREMENTS.md")]
CITED = sorted({name for doc in DOCUMENTS for name in re.findall(r"benchmarks/(\w+\.py)", doc.read_text())})
NEEDS_TRITON = {"hold_effect.py"}  # it holds a GPU with a Triton kernel as it loads
PLUGINS = {"suite_cpu.py"}  # a pytest plugin (-p suite_cpu), run as such by tests/test_suite_tools.py


def test_the_documents_cite_benchmarks_that_exist():
    assert CITED and all((ROOT / "benchmarks" / name).is_file() for name in CITED), CITED


@pytest.mark.parametrize("name", [name for name in CITED if name not in PLUGINS])
def test_each_cited_benchmark_answers_help(name):
    if name in NEEDS_TRITON and importlib.util.find_spec("triton") is None:
        pytest.skip(f"{name} loads Triton, a GPU machine's package")
    done = subprocess.run([sys.executable, f"benchmarks/{name}", "--help"], cwd=ROOT, capture_output=True, text=True,
                          env={"PYTHONPATH": str(ROOT), "PATH": "/usr/bin:/bin"}, timeout=120)
    assert done.returncode == 0 and name in done.stdout, done.stderr[-2000:]  # its usage names it
    assert "Traceback" not in done.stderr, done.stderr[-2000:]


def test_the_trace_analysis_benchmark_runs_as_its_usage_line_says_at_a_small_size():
    """README once cited it while its own usage line crashed (`args.fixture`): run it, tiled to 20k events."""
    done = subprocess.run([sys.executable, "benchmarks/trace_analysis.py", "--events", "20000", "--runs", "1"],
                          cwd=ROOT, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr[-2000:]
    assert "trace: 20,026 events (tiled from baseline_trace.json.gz" in done.stdout
    assert "per-iteration metrics match" in done.stdout and "ours: median" in done.stdout


def test_the_harness_profiler_profiles_each_sides_worker_through_a_whole_grade():
    """docs/harness.md sends the GPU's per-call cost to `profile_harness.py PUZZLE --workers`: on puzzle0, on this CPU,
    both workers' profiles come back (the learner's side's kept before its last reply, after which it may be killed),
    and the grade inside them ran whole: the candidate's check of the harness's operators and its calls are listed."""
    done = subprocess.run([sys.executable, "benchmarks/profile_harness.py", "puzzle0", "--workers", "--top", "40"],
                          cwd=ROOT, capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stderr[-2000:]
    candidate, ruler = done.stdout.split("\ncandidate-")[1].split("\nruler-")
    assert "dispatch_table.py" in candidate and "(loop_call)" in candidate, candidate[-3000:]
    assert "(loop_call)" in ruler and "dispatch_table.py" not in ruler, ruler[-3000:]


def test_the_call_split_times_each_piece_of_a_timed_call_on_both_sides():
    """`profile_harness.py PUZZLE --calls` (device_grading.sh's calls: step, for what a call's cost is made of): on
    puzzle0, on this CPU, the grade runs whole with its timers in both workers and the coordinator (none of them in
    the harness's watched work, which would refuse it), every piece of a loop call is reported for each side, and
    the candidate's start and checks, which the ruler's side has none of."""
    done = subprocess.run([sys.executable, "benchmarks/profile_harness.py", "puzzle0", "--calls"],
                          cwd=ROOT, capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stderr[-2000:]
    counts = {(words[0], " ".join(words[1:-3])): int(words[-3]) for words in map(str.split, done.stdout.splitlines())
              if len(words) > 4 and words[0] in ("ruler", "candidate", "coordinator")}
    rounds = counts["coordinator", "a round of candidate's"]
    assert counts["coordinator", "a round's checks"] == rounds >= 1
    for side in ("ruler", "candidate"):
        asks = counts[side, "ask loop_call: handled"]
        assert asks >= 3 * rounds  # 3-5 calls a round on the CPU
        for piece in ("making its input", "forward()", "keeping its output", "waits (input made, device drained)"):
            assert counts[side, f"loop call: {piece}"] == asks, (side, piece)  # each call, each of its pieces
    # The candidate's start reads the harness's operators from dry runs of its work; the ruler's reads none.
    assert counts["candidate", "start: a dry run under torch's profiler"] >= 2
    assert ("ruler", "start: a dry run under torch's profiler") not in counts
    assert counts["candidate", "a check of the harness's operators"] > counts["candidate", "loop call: forward()"]
    assert "the timed rounds:" in done.stdout and "tampered" not in done.stdout + done.stderr


def test_a_solutions_grade_becomes_a_fixture_row_with_its_intervals(tmp_path):
    """`grade_cheats.py --solutions` (the device calls' re-grades, each puzzle's styles in one file) keeps each grade
    whole, so `grades_fixture.py` makes the rows tests/test_grading_rules.py re-reads under today's bars: run for
    real on puzzle0's reference, on this CPU."""
    out = tmp_path / "solutions_puzzle0.json"
    done = subprocess.run([sys.executable, "benchmarks/grade_cheats.py", "puzzle0", "--which", "reference", "--json",
                           str(out)], cwd=ROOT, capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stderr[-2000:]
    made = subprocess.run([sys.executable, "benchmarks/grades_fixture.py", "puzzle0", "part1", str(out)], cwd=ROOT,
                          capture_output=True, text=True, timeout=120)
    assert made.returncode == 0, made.stderr[-2000:]
    assert json.loads(out.read_text())[0]["card"] == ""  # no GPU here: nvidia-smi names none
    [row] = json.loads(made.stdout)
    assert (row["puzzle"], row["which"], row["call"], row["run"]) == ("puzzle0", "reference", "part1", 1)
    estimate = row["speedups"]["call"]["baseline"]
    assert estimate["low"] <= estimate["median"] <= estimate["high"] and row["tier_then"] in ("", "bronze", "silver",
                                                                                             "gold")
