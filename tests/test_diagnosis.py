import pytest

from tutor.catalog import get_puzzle
from tutor.errors import TutorError
from tutor.grading.answer import answer_problem, read_answer, unreadable_answer
from tutor.grading.diagnosis import check_diagnosis
from tutor.grading.verdict import Criterion, Verdict

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


@pytest.mark.parametrize("text, message, excerpt", [
    ("bottleneck = [oops\n", "answer.toml, line 1, column 15: not valid TOML (Invalid value).",
     ["  1 │ bottleneck = [oops", "    │               ^"]),
    ('bottleneck = "x"\nvalue = [1,\n', "answer.toml, line 2: not valid TOML (Invalid value at the end of the file: "
     "is a bracket or quote left open?).", ["  2 │ value = [1,"]),
    ("bottleneck = 3\n", 'answer.toml, line 1: bottleneck is a number: write it as text, bottleneck = "<id>".',
     ["  1 │ bottleneck = 3"]),
    ('bottleneck = "x"\n\n[[evidence]]\nmetric = "a"\nvalue = 1\n\n[[evidence]]\nmetric = "b"\nvalue = "0.5"\n',
     'answer.toml, line 9: evidence #2 needs a metric name (text) and a value (a number); its value is text ("0.5"): '
     "write the number without quotes.", ['  9 │ value = "0.5"']),
    ('bottleneck = "x"\n[[evidence]]\nvalue = 2\n', "answer.toml, line 2: evidence #1 needs a metric name (text) "
     "and a value (a number); its metric is missing.", ["  2 │ [[evidence]]"]),
    ('bottleneck = "x"\n[evidence]\nmetric = "a"\n', "answer.toml, line 2: evidence must be a list of [[evidence]] "
     "tables.", ["  2 │ [evidence]"]),
])
def test_an_unreadable_answer_names_the_line_at_fault(tmp_path, text, message, excerpt):
    path = tmp_path / "answer.toml"
    path.write_text(text)
    problem = answer_problem(path)
    assert (problem.message, problem.excerpt(), problem.path) == (message, excerpt, path)
    assert "[[evidence]]" in problem.advice


def test_an_answer_not_given_yet_is_no_unreadable_file(tmp_path):
    path = tmp_path / "answer.toml"
    path.write_text((get_puzzle("puzzle0").folder / "starter" / "answer.toml").read_text())
    assert answer_problem(path) is None  # the template's empty bottleneck: the diagnosis says so, no panel
    assert answer_problem(tmp_path / "missing.toml") is None
    path.write_bytes(b'bottleneck = "\xff"\n')
    assert answer_problem(path).message == "answer.toml: not UTF-8 text: save it as UTF-8."


def test_the_unreadable_answer_behind_a_verdict_is_the_one_its_diagnosis_failed_on(tmp_path):
    path = tmp_path / "answer.toml"
    path.write_text("bottleneck = [oops\n")
    problem = answer_problem(path)

    def verdict(diagnosis: Criterion) -> Verdict:
        return Verdict("puzzle0", [Criterion("correctness", True, "ok"), diagnosis])

    assert unreadable_answer(verdict(Criterion("diagnosis", False, problem.message)), path).message == problem.message
    assert unreadable_answer(verdict(Criterion("diagnosis", False, "Wrong bottleneck.")), path) is None
    path.write_text(GOOD)  # fixed since the grade read it
    assert unreadable_answer(verdict(Criterion("diagnosis", False, problem.message)), path) is None


def test_only_numbers_from_this_learners_latest_baseline_profile_count(workspace, tmp_path):
    """Evidence is checked against the workspace's own progress db: the newest baseline profile of
    this puzzle. Numbers from anywhere else (the README, another learner, an older profile, the
    learner's own code, another puzzle) fail even when they are real profile numbers."""
    from tutor import actions
    from tutor.metrics import ProfileMetrics
    from tutor.progress import Progress
    from tutor.workspace import init_workspace

    def record(ws, puzzle_id, workload, ops, us):
        metrics = ProfileMetrics(values={"cpu.ops_per_iter": ops, "cpu.time_per_iter_us": us})
        Progress(ws.db_path).record_profile(puzzle_id, workload, "hash", metrics, tmp_path / "t.json", tmp_path)

    puzzle = get_puzzle("puzzle0")
    other = init_workspace(tmp_path / "someone-else")
    record(other, "puzzle0", "baseline", 16386.0, 96673.8)  # another learner's machine (the README's numbers)
    record(workspace, "puzzle0", "baseline", 20000.0, 50000.0)  # an older profile of this learner's
    record(workspace, "puzzle0", "baseline", 16384.0, 80000.0)  # the newest: the one that counts
    record(workspace, "puzzle0", "mine", 4.0, 1200.0)  # their own code, not the baseline
    record(workspace, "puzzle1", "baseline", 900.0, 3000.0)  # another puzzle

    def cite(ops, us):
        text = GOOD.replace("16000", repr(ops)).replace("81000", repr(us))
        (workspace.editable_path(puzzle, "answer.toml")).write_text(text)
        return actions._diagnose(workspace, puzzle, Progress(workspace.db_path))

    assert cite(16384.0, 80000.0).passed
    for ops, us in [(16386.0, 96673.8), (20000.0, 50000.0), (4.0, 1200.0), (900.0, 3000.0)]:
        criterion = cite(ops, us)
        assert not criterion.passed, (ops, us)
        assert any("your profile shows" in d for d in criterion.details), criterion.details


@pytest.mark.parametrize("named, telling, tells", [
    ("host_sync", "sync.calls_per_iter", "launch.api_us_per_iter"),
    ("launch_overhead", "kernels.per_iter", "sync.calls_per_iter"),
])
def test_where_two_classes_are_accepted_the_evidence_must_tell_the_named_one_apart(tmp_path, named, telling, tells):
    """puzzle4 accepts a host sync and launch overhead: both idle the GPU, so an idle GPU and a slow call (what its
    story says) back neither; the number that shows the class named must be among the evidence."""
    puzzle = get_puzzle("puzzle4")
    profile = {"gpu.busy_fraction": 0.07, "cpu.time_per_iter_us": 39700.0, "sync.calls_per_iter": 45.75,
               "kernels.per_iter": 930.5, "launch.api_us_per_iter": 9000.0}
    story_only = (f'bottleneck = "{named}"\n[[evidence]]\nmetric = "gpu.busy_fraction"\nvalue = 0.07\n'
                  '[[evidence]]\nmetric = "cpu.time_per_iter_us"\nvalue = 39700\n')
    c = check_diagnosis(puzzle, answer(tmp_path, story_only), profile)
    assert not c.passed and any("tells" in d and named in d for d in c.details), c.details
    wrong_one = story_only + f'[[evidence]]\nmetric = "{tells}"\nvalue = {profile[tells]}\n'
    assert not check_diagnosis(puzzle, answer(tmp_path, wrong_one), profile).passed
    right = story_only + f'[[evidence]]\nmetric = "{telling}"\nvalue = {profile[telling]}\n'
    assert check_diagnosis(puzzle, answer(tmp_path, right), profile).passed
