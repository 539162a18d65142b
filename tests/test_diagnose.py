"""`diagnose` as a classifier, on the puzzles' recordings (each recorded on the Hopper card its recorded_on.txt or
study.RECORDED_ON names; puzzle0's on a 2-core CPU machine), and its rules on profiles without evidence."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from tutor.catalog import all_puzzles, get_puzzle
from tutor.diagnose.accuracy import baseline_cases, reference_cases
from tutor.diagnose.host_time import host_time
from tutor.diagnose.recorded import recorded_profile
from tutor.diagnose.report import diagnose
from tutor.diagnose.rules import RULES, Profile

ROOT = Path(__file__).resolve().parents[1]
FIXTURES = ROOT / "tests" / "fixtures"
PUZZLES = list(all_puzzles(drafts=True).values())


@pytest.fixture(scope="module")
def baselines():
    return baseline_cases(PUZZLES)


def test_the_class_ranked_first_on_26_of_the_28_recorded_baselines_is_one_the_puzzle_accepts(baselines):
    assert len(baselines) == 28
    wrong = [(c.puzzle, c.expected, c.ranked) for c in baselines if not c.right]
    assert len(wrong) <= 2, wrong


def test_no_recorded_reference_ranks_the_class_its_puzzle_teaches_first():
    cases = reference_cases(PUZZLES, FIXTURES)
    assert len(cases) >= 10
    assert all(c.right for c in cases), [(c.puzzle, c.ranked) for c in cases if not c.right]


@pytest.mark.parametrize("values", [{}, {"gpu.busy_fraction": 0.99, "gpu.time_per_iter_us": 900.0,
                                         "cpu.time_per_iter_us": 1000.0, "kernels.per_iter": 3.0},
                                    {"cpu.time_per_iter_us": 100.0, "cpu.ops_per_iter": 10.0}])
def test_a_profile_without_evidence_names_no_class(values):
    assert all(rule(Profile(values)) is None for rule in RULES)
    assert diagnose(Profile(values)).findings == []


def test_each_finding_cites_the_profiles_own_numbers(baselines):
    """Evidence is read from the profile, never written into a rule: every cited metric the profile holds carries
    the profile's value (derived figures, such as a mean kernel's length, are the rule's own arithmetic)."""
    for puzzle in PUZZLES:
        profile = recorded_profile(puzzle)
        for finding in diagnose(profile).findings:
            assert finding.evidence and 0 < finding.share <= 1.0, (puzzle.id, finding)
            for ev in finding.evidence:
                if ev.metric in profile.values:
                    assert ev.value == profile.get(ev.metric), (puzzle.id, finding.bottleneck, ev)


def test_the_host_row_of_a_trace_shows_where_the_hosts_time_went():
    """puzzle23's baseline hands its cache back after every prompt (cudaFree and cudaMalloc outside any operator);
    puzzle7's waits on its copies to pageable memory."""
    fragmenting = host_time(get_puzzle("puzzle23", drafts=True).recordings_dir / "baseline_trace.json.gz")
    assert fragmenting["host.alloc_us_per_iter"] >= 0.1 * fragmenting["host.window_us_per_iter"]
    copying = host_time(get_puzzle("puzzle7").recordings_dir / "baseline_trace.json.gz")
    assert copying["host.memcpy_us_per_iter"] >= 0.8 * copying["host.window_us_per_iter"]
    assert copying["host.alloc_us_per_iter"] == 0


def test_what_the_profile_cannot_tell_apart_is_said():
    """A busy GPU profiled without Nsight Compute: the kernel-level classes need it, and the report says so."""
    busy = Profile({"gpu.busy_fraction": 0.99, "gpu.time_per_iter_us": 900.0, "cpu.time_per_iter_us": 100.0})
    assert any("--kernels" in note for note in diagnose(busy).unclear)
    assert not any("--kernels" in note for note in diagnose(recorded_profile(get_puzzle("puzzle9"))).unclear)


def test_the_accuracy_benchmark_prints_its_table_and_its_last_line():
    out = subprocess.run([sys.executable, "benchmarks/diagnose_accuracy.py"], cwd=ROOT, capture_output=True,
                         text=True, check=True).stdout.strip().splitlines()
    assert out[0].split()[:2] == ["puzzle", "profile"] and len(out) >= 28 + 10 + 2
    assert out[-1].startswith("right on ") and out[-1].endswith(" of 28 baselines")
