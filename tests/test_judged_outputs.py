"""A path-dependent output judged along its own path (puzzle.toml's [correctness] judged, Worker.judge): a greedy
decode that breaks a tie the other way parts from the oracle's tokens for good, yet every choice it made was a
best one; a decode that skips the model's work makes choices the oracle scores below the best. Run through the
harness as a grade runs it (tests/fixtures/judged_decode: a toy decoder whose tokens 0 and 1 always tie)."""

from __future__ import annotations

from pathlib import Path

import pytest

from conftest import harness_check
from tutor.catalog import get_puzzle
from tutor.grading.performance import check_correctness
from tutor.runner import RunFailed

TOY = Path(__file__).parent / "fixtures" / "judged_decode"


def check(mine: str | Path, tmp_path: Path, judged: bool) -> dict:
    return harness_check(get_puzzle("puzzle0"), TOY / mine, tmp_path, baseline=TOY / "baseline.py",
                         spec=TOY / "spec.py", checks=2, judged=judged)


def ties_to_higher(tmp_path: Path) -> Path:
    variant = tmp_path / "ties_to_higher.py"
    variant.write_text((TOY / "baseline.py").read_text().replace("TIES_TO_HIGHER = False", "TIES_TO_HIGHER = True"))
    return variant


def every_check(result: dict) -> list[dict]:
    return result["checks"] + result["timed_checks"]


def test_a_decode_that_breaks_ties_the_other_way_is_right_judged_and_wrong_token_by_token(tmp_path):
    judged = every_check(check(ties_to_higher(tmp_path), tmp_path, judged=True))
    assert judged and all(c["judged"] and c["rel_l2"] == 0.0 for c in judged), judged
    plain = every_check(check(ties_to_higher(tmp_path), tmp_path, judged=False))
    assert all(c["rel_l2"] > 0.1 for c in plain), plain


def test_the_oracle_judged_against_itself_reads_exact(tmp_path):
    assert all(c["rel_l2"] == 0.0 for c in every_check(check("baseline.py", tmp_path, judged=True)))


def test_a_decode_that_skips_the_models_work_is_judged_wrong_on_every_call_and_the_grade_says_how(tmp_path):
    result = check("skips_the_model.py", tmp_path, judged=True)
    judged = every_check(result)
    assert judged and all(c["judged"] and c["rel_l2"] > 0.1 for c in judged), judged
    criterion = check_correctness(get_puzzle("puzzle0"), result["checks"], result["timed_checks"])
    assert not criterion.passed
    assert "between each choice's score and the best of its step, along your own path" in criterion.details[0]


def test_a_decoded_output_of_the_wrong_shape_is_named_not_judged(tmp_path):
    wrong = tmp_path / "wrong_shape.py"
    wrong.write_text((TOY / "skips_the_model.py").read_text().replace("STEPS = 12", "STEPS = 13"))
    checks = every_check(check(wrong, tmp_path, judged=True))
    assert all("output shape" in c["problem"] for c in checks), checks


def test_a_judged_puzzle_whose_spec_cannot_judge_is_named_broken(tmp_path):
    spec = tmp_path / "spec.py"
    spec.write_text((TOY / "spec.py").read_text().replace("def judge(", "def not_judge("))
    with pytest.raises(RunFailed, match="has no judge"):
        harness_check(get_puzzle("puzzle0"), TOY / "baseline.py", tmp_path, baseline=TOY / "baseline.py", spec=spec,
                      judged=True)
