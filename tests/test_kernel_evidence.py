"""[kernel_evidence] for every kernel puzzle that asks for it (tutor.grading.kernel_evidence), read against
puzzle9's two kernels as Nsight Compute profiled them on the H100: the one whose launch bounds make it
spill (the baseline) and the one given its registers (the reference)."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from tutor.catalog import get_puzzle, load_puzzle
from tutor.errors import TutorError
from tutor.grading import kernel_evidence
from tutor.grading.puzzle_checks import LearnerProfiles, puzzle_criteria
from conftest import ncu_learner_profiles

FIXTURES = Path(__file__).parent / "fixtures"
P9 = get_puzzle("puzzle9", drafts=True)


def profiles(mine_code: str = "graded") -> LearnerProfiles:
    return ncu_learner_profiles(FIXTURES / "puzzle9_baseline_ncu.csv", FIXTURES / "puzzle9_reference_ncu.csv",
                                mine_code)


@pytest.mark.parametrize("metric, baseline, mine", [("ncu.spill_instructions", 159_793_152, 0),
                                                    ("ncu.registers_per_thread", 32, 48)])
def test_a_metric_that_tells_the_kernels_apart_in_the_learners_profiles_passes(metric, baseline, mine):
    criterion = kernel_evidence.criterion(P9, {"metric": metric, "baseline": baseline, "mine": mine}, profiles())
    assert criterion.passed, criterion.details
    assert "project" in criterion.details[0]  # the kernel each value came from is named


def test_a_metric_both_kernels_share_explains_nothing():
    cited = {"metric": "ncu.threads_per_instruction", "baseline": 32, "mine": 32}
    criterion = kernel_evidence.criterion(P9, cited, profiles())
    assert not criterion.passed and "same for both" in criterion.summary


def test_values_the_profiles_do_not_show_fail():
    cited = {"metric": "ncu.spill_instructions", "baseline": 0, "mine": 159_793_152}  # swapped
    assert not kernel_evidence.criterion(P9, cited, profiles()).passed


def test_a_profile_of_older_code_does_not_count():
    cited = {"metric": "ncu.spill_instructions", "baseline": 159_793_152, "mine": 0}
    criterion = kernel_evidence.criterion(P9, cited, profiles(mine_code="an earlier workload.py"))
    assert not criterion.passed and any("older workload.py" in d for d in criterion.details)


def test_no_table_caps_the_tier_below_the_one_it_is_required_for():
    criterion = kernel_evidence.criterion(P9, {}, LearnerProfiles())
    assert P9.kernel_evidence_for == "silver" and criterion.passed and criterion.caps_tier == "bronze"


def test_the_grade_reads_the_table_from_answer_toml(tmp_path):
    answer = tmp_path / "answer.toml"
    answer.write_text('bottleneck = "register_spills"\n\n[kernel_evidence]\nmetric = "ncu.spill_instructions"\n'
                      "baseline = 159793152\nmine = 0\n")
    [criterion] = [c for c in puzzle_criteria(P9, {}, answer, profiles()) if c.name == kernel_evidence.NAME]
    assert criterion.passed, criterion.details
    assert not [c for c in puzzle_criteria(get_puzzle("puzzle1"), {"memory": None}, answer, profiles())
                if c.name == kernel_evidence.NAME]  # a puzzle that does not ask for it is not graded on it


def test_it_cannot_be_required_for_the_first_tier(tmp_path):
    folder = tmp_path / "p"
    shutil.copytree(P9.folder, folder)
    toml = (folder / "puzzle.toml").read_text()
    (folder / "puzzle.toml").write_text(toml.replace('required_for = "silver"', 'required_for = "bronze"'))
    with pytest.raises(TutorError, match="after the first"):
        load_puzzle(folder)
