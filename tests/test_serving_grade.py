"""A serving puzzle graded end to end on the CPU (issue 18): its [serving] section in puzzle.toml, the
baseline's server profiled (each step an iteration, the replay's figures as serving.* metrics), then the
learner's server graded beside it: tokens against the oracle's, throughput at the latency limit, the
diagnosis against the learner's own profile. The toy servers of tests/test_serving_rounds.py serve.

The tier's bar is set where no machine's load can move the verdict (0.01x, the latency limit 100x): the
speed itself is the GPU's to measure, and tests/test_serving.py checks the tier arithmetic on a virtual clock.
"""

from __future__ import annotations

import textwrap

import pytest

from test_serving_rounds import CONTINUOUS, SPEC, STATIC
from tutor import actions
from tutor.catalog import load_puzzle
from tutor.errors import TutorError

PUZZLE_TOML = """
id = "servingtoy"
title = "A toy server"
level = 5
summary = "a static batcher"
profilers = ["torch"]

[hardware]
device = "cpu"

[files]
editable = ["workload.py", "answer.toml"]

[workloads]
baseline = "baseline.py"

[correctness]
oracle = "baseline"
max_rel_l2 = 0.0

[timing]
timeout_s = 240

[serving]
replays = 2
limit_s = 60
max_latency_ratio = 100.0

[[tiers]]
name = "bronze"
vs = "baseline"
min_speedup = 0.01
clock = "throughput"

[diagnosis]
accepted = ["batching_policy"]
relevant_metrics = ["serving.*", "cpu.*"]
min_evidence = 2
"""


@pytest.fixture
def toy(tmp_path):
    folder = tmp_path / "servingtoy"
    folder.mkdir()
    for name, text in (("puzzle.toml", PUZZLE_TOML), ("spec.py", SPEC), ("baseline.py", STATIC),
                       ("story.md", "# A toy server\n")):
        (folder / name).write_text(textwrap.dedent(text))
    return load_puzzle(folder)


def answer_from(metrics, names: list[str]) -> str:
    lines = ['bottleneck = "batching_policy"']
    for name in names:
        lines += ["[[evidence]]", f'metric = "{name}"', f"value = {metrics.values[name]!r}"]
    return "\n".join(lines) + "\n"


def test_a_serving_puzzle_is_profiled_step_by_step_and_graded_on_its_replays(workspace, toy):
    assert toy.serving.replays == 2 and [t.clock for t in toy.tiers] == ["throughput"]
    profiled = actions.profile(workspace, toy, "baseline")
    values = profiled.metrics.values
    assert values["serving.requests"] == 10 and values["serving.tokens"] > 40  # the trace: 10 requests, one of 40
    # Each step an iteration, recorded from step 10 (a quarter of the long request's 40) for up to 300 steps. How many
    # steps the replay takes depends on how the requests' arrivals fall between them (a busy machine batches more
    # of them at once), so the count is checked against the replay's own steps that gave tokens, not a fixed range.
    served_steps = round(values["serving.tokens"] / values["serving.tokens_per_step"])
    assert served_steps >= 40 and served_steps - 10 <= values["iterations"] <= 300
    assert 1 <= values["serving.tokens_per_step"] <= 10
    folder = workspace.puzzle_dir(toy)
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "workload.py").write_text(textwrap.dedent(CONTINUOUS))
    (folder / "answer.toml").write_text(answer_from(profiled.metrics, ["serving.latency_p99_s",
                                                                      "serving.tokens_per_step"]))
    events = []
    verdict = actions.grade(workspace, toy, on_event=events.append)
    criteria = {c.name: c for c in verdict.criteria}
    assert all(c.passed for c in verdict.criteria), [(c.name, c.summary, c.details) for c in verdict.criteria]
    # The app's progress row for a serving grade: every stage the harness reports is one of its chips.
    from tutor.app.runs import run_kind

    chips = run_kind("grade", toy).stages
    assert {e["stage"] for e in events if e["type"] in ("stage", "progress")} <= set(chips)
    assert [e["done"] for e in events if e["type"] == "progress" and e["stage"] == "replaying"] == [1, 2, 3]
    assert verdict.tier == "bronze" and "30 requests over 3 replays" in criteria["correctness"].summary
    assert sum(line.startswith("replay ") for line in criteria["performance"].details) == 2
    assert set(verdict.speedups) == {"baseline"} and verdict.gpu_speedups == {}


def test_a_server_that_gets_a_token_wrong_earns_no_tier(workspace, toy):
    folder = workspace.puzzle_dir(toy)
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "workload.py").write_text(textwrap.dedent(CONTINUOUS.replace("out[r[0]] = [t]", "out[r[0]] = [t + 1]")))
    (folder / "answer.toml").write_text('bottleneck = "batching_policy"\n')
    verdict = actions.grade(workspace, toy)
    correctness = next(c for c in verdict.criteria if c.name == "correctness")
    assert not correctness.passed and verdict.tier == ""
    assert correctness.summary.startswith("30 of 30 requests got other tokens")


def test_a_quick_check_of_a_serving_puzzle_says_to_grade_it(workspace, toy):
    from tutor.quick_check import quick_check

    folder = workspace.puzzle_dir(toy)
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "workload.py").write_text(textwrap.dedent(CONTINUOUS))
    with pytest.raises(TutorError) as info:
        quick_check(workspace, toy)
    assert "serving puzzle" in info.value.message and "infprof-tutor grade servingtoy" in info.value.advice


def test_a_serving_tier_on_another_clock_is_refused(tmp_path):
    folder = tmp_path / "servingtoy"
    folder.mkdir()
    (folder / "puzzle.toml").write_text(PUZZLE_TOML.replace('clock = "throughput"', 'clock = "call"'))
    (folder / "baseline.py").write_text(STATIC)
    with pytest.raises(TutorError, match="a serving puzzle's tiers are on 'throughput'"):
        load_puzzle(folder)
    (folder / "puzzle.toml").write_text(PUZZLE_TOML.split("[serving]")[0] + PUZZLE_TOML.split("max_latency_ratio = 100.0")[1])
    with pytest.raises(TutorError, match=r"'throughput' needs a \[serving\] section"):
        load_puzzle(folder)


def test_a_serving_tier_measured_against_another_server_than_the_oracle_is_refused(tmp_path):
    """The grade replays the oracle's server beside the learner's: a tier against any other would be read
    against the oracle, silently."""
    folder = tmp_path / "servingtoy"
    folder.mkdir()
    (folder / "baseline.py").write_text(STATIC)
    (folder / "puzzle.toml").write_text(PUZZLE_TOML.replace('baseline = "baseline.py"',
                                                            'baseline = "baseline.py"\ntuned = "baseline.py"')
                                        .replace('vs = "baseline"', 'vs = "tuned"'))
    with pytest.raises(TutorError, match="measured against 'tuned', but a serving grade replays the oracle's"):
        load_puzzle(folder)


def test_a_serving_puzzles_brief_says_how_a_replay_is_graded(toy):
    from tutor.brief import grading_markdown

    text = grading_markdown(toy)
    assert "exactly the tokens" in text and "p99 latency ratio stays within 100x" in text
    assert "relative L2" not in text and "Physical floor" not in text and "tokens a second" in text



def test_a_server_that_gives_many_tokens_a_step_is_refused_in_its_profile_and_its_grade(workspace, toy):
    """A request's whole output in one step: right tokens, as a table read off the weights would give them, but
    no decoder makes them so. Its profile and its grade stop with the rule in words, not a tier."""
    from tutor.runner import RunFailed

    whole = CONTINUOUS.replace('''        for r, t in zip(self.live, tokens):
            out[r[0]] = [t]
            r[1], r[2] = t, r[2] - 1''', '''        for r, t in zip(self.live, tokens):
            out[r[0]] = [t]
            r[1], r[2] = t, r[2] - 1
            while r[2] > 0:  # the rest of the request at once
                r[1] = next_tokens(self.state, [r[1]])[0]
                out[r[0]].append(r[1])
                r[2] -= 1''')
    assert whole != CONTINUOUS
    folder = workspace.puzzle_dir(toy)
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "workload.py").write_text(textwrap.dedent(whole))
    with pytest.raises(RunFailed) as info:
        actions.profile(workspace, toy, "mine")
    assert info.value.kind == "workload_error" and "a decoder makes one token a request a step" in str(info.value)
    with pytest.raises(RunFailed) as info:
        actions.grade(workspace, toy)
    assert info.value.kind == "workload_error" and "tokens at once" in str(info.value)
