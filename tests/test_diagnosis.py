import pytest

from tutor.catalog import get_puzzle
from tutor.errors import TutorError
from tutor.grading.answer import read_answer
from tutor.grading.diagnosis import check_diagnosis

PROFILE = {"cpu.ops_per_iter": 16384.0, "cpu.time_per_iter_us": 80000.0, "iterations": 3.0}


def answer(tmp_path, text):
    path = tmp_path / "answer.toml"
    path.write_text(text)
    return read_answer(path)


GOOD = """
bottleneck = "cpu_overhead"
[[evidence]]
metric = "cpu.ops_per_iter"
value = 16000
[[evidence]]
metric = "cpu.time_per_iter_us"
value = 81000
"""


def test_right_bottleneck_with_own_numbers_passes(tmp_path):
    c = check_diagnosis(get_puzzle("puzzle0"), answer(tmp_path, GOOD), PROFILE)
    assert c.passed, c.details


def test_numbers_not_in_the_profile_fail(tmp_path):
    c = check_diagnosis(get_puzzle("puzzle0"), answer(tmp_path, GOOD.replace("16000", "9000")), PROFILE)
    assert not c.passed
    assert any("your profile shows 1.638e+04" in d for d in c.details)


def test_unknown_metric_fails(tmp_path):
    c = check_diagnosis(get_puzzle("puzzle0"), answer(tmp_path, GOOD.replace("cpu.ops_per_iter", "cpu.vibes")), PROFILE)
    assert not c.passed


def test_wrong_bottleneck_fails_even_with_good_evidence(tmp_path):
    c = check_diagnosis(get_puzzle("puzzle0"), answer(tmp_path, GOOD.replace("cpu_overhead", "l2_misses")), PROFILE)
    assert not c.passed and c.summary == "Wrong bottleneck."


def test_unknown_id_lists_valid_ones(tmp_path):
    c = check_diagnosis(get_puzzle("puzzle0"), answer(tmp_path, GOOD.replace("cpu_overhead", "slowness")), PROFILE)
    assert not c.passed and "cpu_overhead" in c.details[0]


def test_no_profile_yet_says_what_to_run(tmp_path):
    c = check_diagnosis(get_puzzle("puzzle0"), answer(tmp_path, GOOD), None)
    assert not c.passed and any("infprof-tutor profile puzzle0" in d for d in c.details)


def test_too_little_relevant_evidence_fails(tmp_path):
    one = GOOD.split("[[evidence]]")
    c = check_diagnosis(get_puzzle("puzzle0"), answer(tmp_path, "[[evidence]]".join(one[:2])), PROFILE)
    assert not c.passed and any("at least 2" in d for d in c.details)


def test_true_but_irrelevant_evidence_does_not_count(tmp_path):
    text = GOOD.replace("cpu.time_per_iter_us", "iterations").replace("81000", "3")
    c = check_diagnosis(get_puzzle("puzzle0"), answer(tmp_path, text), PROFILE)
    assert not c.passed and any("does not point at" in d for d in c.details)


@pytest.mark.parametrize("text, words", [
    ('bottleneck = "cpu_overhead', "not valid TOML"),
    ("", "names no bottleneck"),
    ('bottleneck = "x"\n[[evidence]]\nmetric = "a"\nvalue = "high"\n', "needs a metric name"),
    ('bottleneck = "x"\nevidence = 3\n', "must be a list"),
])
def test_malformed_answers_explain_the_format(tmp_path, text, words):
    with pytest.raises(TutorError) as info:
        answer(tmp_path, text)
    assert words in info.value.message
    assert "[[evidence]]" in info.value.advice
