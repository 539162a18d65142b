"""A capstone's later stages (tutor.grading.stages): puzzle.toml's [[stages]] read and checked, answer.toml's
[[stages]] read, and each stage credited only on numbers from a profile of the learner's own workload that shows
its bottleneck; a stage not credited caps the tier below the one it unlocks."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from tutor.actions import capped
from tutor.catalog import CHALLENGES_DIR, load_puzzle
from tutor.errors import TutorError
from tutor.grading.answer import AnswerError, read_answer
from tutor.grading.stages import stage_criteria, unmet
from tutor.metrics import ProfileMetrics
from tutor.progress import Progress

STAGES = """
[[stages]]
name = "the copies"
tier = "silver"
accepted = ["h2d_d2h_copy"]
relevant_metrics = ["memcpy.*"]
min_evidence = 1
shows = ["memcpy.h2d_bytes_per_iter > 1000"]

[[stages]]
name = "the launches"
tier = "gold"
accepted = ["launch_overhead"]
relevant_metrics = ["launch.*", "kernels.*"]
min_evidence = 2
shows = ["gpu.busy_fraction < 0.5", "kernels.per_iter > 100"]
"""


def staged_puzzle(tmp_path: Path, stages: str = STAGES):
    """puzzle0's folder with later stages added to its puzzle.toml."""
    folder = tmp_path / "capstone"
    shutil.copytree(CHALLENGES_DIR / "puzzle0", folder)
    meta = folder / "puzzle.toml"
    meta.write_text(meta.read_text() + stages)
    return load_puzzle(folder)


def profile_row(**values: float) -> dict:
    """A progress row of one of the learner's own profiles, as tutor.progress keeps it."""
    return {"metrics_json": ProfileMetrics(profiler="torch", device="cuda", values=values).to_json()}


def answer_with(tmp_path: Path, text: str):
    path = tmp_path / "answer.toml"
    path.write_text('bottleneck = "cpu_overhead"\n[[evidence]]\nmetric = "cpu.time_per_iter_us"\nvalue = 1.0\n' + text)
    return read_answer(path)


COPIES = ('[[stages]]\nbottleneck = "h2d_d2h_copy"\n'
          '[[stages.evidence]]\nmetric = "memcpy.h2d_bytes_per_iter"\nvalue = 4096\n')
LAUNCHES = ('[[stages]]\nbottleneck = "launch_overhead"\n'
            '[[stages.evidence]]\nmetric = "kernels.per_iter"\nvalue = 300\n'
            '[[stages.evidence]]\nmetric = "launch.api_us_per_iter"\nvalue = 900\n')
AFTER_COPIES = profile_row(**{"memcpy.h2d_bytes_per_iter": 4096.0, "gpu.busy_fraction": 0.2})
AFTER_LAUNCHES = profile_row(**{"memcpy.h2d_bytes_per_iter": 0.0, "gpu.busy_fraction": 0.3, "kernels.per_iter": 300.0,
                                "launch.api_us_per_iter": 900.0})


def test_the_catalog_reads_a_capstones_stages(tmp_path):
    puzzle = staged_puzzle(tmp_path)
    assert [(s.name, s.tier, s.diagnosis.accepted, s.shows) for s in puzzle.stages] == [
        ("the copies", "silver", ("h2d_d2h_copy",), ("memcpy.h2d_bytes_per_iter > 1000",)),
        ("the launches", "gold", ("launch_overhead",), ("gpu.busy_fraction < 0.5", "kernels.per_iter > 100"))]
    assert load_puzzle(CHALLENGES_DIR / "puzzle0").stages == ()


@pytest.mark.parametrize("stages, problem", [
    (STAGES.replace('tier = "silver"', 'tier = "bronze"'), "must name a tier after the first"),
    (STAGES.replace('tier = "silver"', 'tier = "platinum"'), "must name a tier after the first"),
    (STAGES.replace("> 1000", "is large"), "write each as"),
    (STAGES.replace('tier = "silver"', 'tier = "x"').replace('tier = "gold"', 'tier = "silver"').replace(
        'tier = "x"', 'tier = "gold"'), "in the tiers' order"),
])
def test_a_stage_that_cannot_be_graded_is_named_when_the_catalog_reads_it(tmp_path, stages, problem):
    with pytest.raises(TutorError, match=problem):
        staged_puzzle(tmp_path, stages)


def test_answer_toml_reads_each_later_stage_in_order(tmp_path):
    answer = answer_with(tmp_path, COPIES + LAUNCHES)
    assert [(s.bottleneck, [(e.metric, e.value) for e in s.evidence]) for s in answer.stages] == [
        ("h2d_d2h_copy", [("memcpy.h2d_bytes_per_iter", 4096.0)]),
        ("launch_overhead", [("kernels.per_iter", 300.0), ("launch.api_us_per_iter", 900.0)])]
    assert answer_with(tmp_path, "").stages == ()
    with pytest.raises(AnswerError, match="stage 2's bottleneck is a number"):
        answer_with(tmp_path, "[[stages]]\nbottleneck = 3\n")
    with pytest.raises(AnswerError, match="stage 2's evidence #1 needs a metric name"):
        answer_with(tmp_path, '[[stages]]\nbottleneck = "x"\n[[stages.evidence]]\nmetric = "m"\nvalue = "7"\n')


def tier_after(puzzle, criteria, tier: str = "gold") -> str:
    assert all(c.passed for c in criteria)  # a stage not credited caps the tier; it never fails the grade
    return capped(puzzle, tier, criteria)


def test_each_stage_is_credited_from_the_profile_of_the_learners_code_that_shows_it(tmp_path):
    puzzle = staged_puzzle(tmp_path)
    criteria = stage_criteria(puzzle, answer_with(tmp_path, COPIES + LAUNCHES), [AFTER_LAUNCHES, AFTER_COPIES])
    assert [c.name for c in criteria] == ["stage 2: the copies", "stage 3: the launches"]
    assert [c.caps_tier for c in criteria] == ["", ""] and tier_after(puzzle, criteria) == "gold"


def test_a_stage_not_named_caps_the_tier_below_the_one_it_unlocks(tmp_path):
    puzzle = staged_puzzle(tmp_path)
    none_named = stage_criteria(puzzle, answer_with(tmp_path, ""), [AFTER_LAUNCHES, AFTER_COPIES])
    assert tier_after(puzzle, none_named) == "bronze" and "Not named yet" in none_named[0].summary
    only_the_first = stage_criteria(puzzle, answer_with(tmp_path, COPIES), [AFTER_LAUNCHES, AFTER_COPIES])
    assert tier_after(puzzle, only_the_first) == "silver"
    # The later stage right, the one before it not: the grade credits the stages in turn.
    wrong_first = COPIES.replace('"h2d_d2h_copy"', '"cpu_overhead"')
    skipped = stage_criteria(puzzle, answer_with(tmp_path, wrong_first + LAUNCHES), [AFTER_LAUNCHES, AFTER_COPIES])
    assert [c.caps_tier for c in skipped] == ["bronze", ""] and tier_after(puzzle, skipped) == "bronze"
    assert tier_after(puzzle, none_named, "silver") == "bronze" and tier_after(puzzle, none_named, "") == ""


def test_numbers_from_a_profile_where_the_stage_does_not_show_are_not_credited(tmp_path):
    """The launches cited from a profile in which the GPU was busy (the copies' fix not yet made, say): the numbers
    match that profile, but it does not show the stage's bottleneck."""
    puzzle = staged_puzzle(tmp_path)
    busy = profile_row(**{"gpu.busy_fraction": 0.9, "kernels.per_iter": 300.0, "launch.api_us_per_iter": 900.0})
    criteria = stage_criteria(puzzle, answer_with(tmp_path, COPIES + LAUNCHES), [busy, AFTER_COPIES])
    assert criteria[1].caps_tier == "silver" and "does not show" in criteria[1].summary
    assert any("gpu.busy_fraction < 0.5 (this profile: 0.9)" in d for d in criteria[1].details)


def test_numbers_no_profile_of_the_learners_shows_are_not_credited(tmp_path):
    puzzle = staged_puzzle(tmp_path)
    made_up = stage_criteria(puzzle, answer_with(tmp_path, COPIES.replace("4096", "8192")), [AFTER_COPIES])
    assert made_up[0].caps_tier == "bronze" and any("your profile shows 4096" in d for d in made_up[0].details)
    unprofiled = stage_criteria(puzzle, answer_with(tmp_path, COPIES), [])
    assert unprofiled[0].caps_tier == "bronze"
    assert any("--which mine" in d for d in unprofiled[0].details)


def test_a_condition_on_a_metric_the_profile_lacks_is_unmet():
    assert unmet(("a > 1", "b < 2"), {"a": 3.0}) == ["b < 2 (this profile: absent)"]
    assert unmet(("a > 1",), {"a": 1.0}) == ["a > 1 (this profile: 1)"]


def test_a_grade_reads_the_learners_answer_and_every_profile_of_their_own_workload(tmp_path):
    """The grade's wiring: puzzle_criteria hands the stages answer.toml and the learner's own profiles of their
    workload (tutor.progress keeps every one, newest first; study mode's recordings are not the learner's)."""
    from tutor.actions import _learner_profiles
    from tutor.grading.puzzle_checks import puzzle_criteria
    from tutor.progress import Progress

    puzzle = staged_puzzle(tmp_path)
    progress = Progress(tmp_path / "progress.db")
    for row, source in ((AFTER_COPIES, "own"), (AFTER_LAUNCHES, "own"), (AFTER_LAUNCHES, "recorded")):
        metrics = ProfileMetrics.from_json(row["metrics_json"])
        progress.record_profile(puzzle.id, "mine", "code", metrics, tmp_path / "t", tmp_path, source=source)
    history = progress.own_profiles(puzzle.id, "mine")
    assert [r["metrics_json"] for r in history] == [AFTER_LAUNCHES["metrics_json"], AFTER_COPIES["metrics_json"]]
    answer = tmp_path / "answer.toml"
    answer_with(tmp_path, COPIES + LAUNCHES)
    criteria = puzzle_criteria(puzzle, {}, answer, _learner_profiles(progress, puzzle, "code"))
    assert [(c.name, c.caps_tier) for c in criteria] == [("stage 2: the copies", ""), ("stage 3: the launches", "")]
    answer.write_text("not toml [")  # unreadable: the diagnosis says why; every later stage waits
    assert [c.caps_tier for c in puzzle_criteria(puzzle, {}, answer, _learner_profiles(progress, puzzle, "c"))] == \
        ["bronze", "silver"]


def with_reference_stages(puzzle, answer: str):
    (puzzle.solution_dir / "answer.toml").write_text(
        'bottleneck = "cpu_overhead"\n[[evidence]]\nmetric = "cpu.time_per_iter_us"\nvalue = 1.0\n' + answer)
    puzzle.recordings_dir.mkdir(exist_ok=True)


def stage_checks(puzzle) -> dict[str, tuple[str, str]]:
    from tutor.dev_check import static_checks

    return {c.name: (c.status, c.detail) for c in static_checks(puzzle) if c.name.startswith("stage ")}


def test_dev_check_credits_the_reference_answers_stages_on_the_recordings_that_show_them(tmp_path):
    """Each later stage's recording (recordings/stage<N>_metrics.json, the profile of the file that shows it):
    the reference answer's stage credited on it, the values its evidence cites read from it."""
    puzzle = staged_puzzle(tmp_path)
    with_reference_stages(puzzle, COPIES + LAUNCHES.replace("300", "1").replace("900", "1"))
    puzzle.recorded_stage(2).write_text(AFTER_COPIES["metrics_json"])
    puzzle.recorded_stage(3).write_text(AFTER_LAUNCHES["metrics_json"])
    assert {n: s for n, (s, _) in stage_checks(puzzle).items()} == {"stage 2: the copies": "ok",
                                                                    "stage 3: the launches": "ok"}
    busy = profile_row(**{"gpu.busy_fraction": 0.95, "kernels.per_iter": 300.0, "launch.api_us_per_iter": 900.0})
    puzzle.recorded_stage(3).write_text(busy["metrics_json"])  # a recording in which the launches do not show
    status, detail = stage_checks(puzzle)["stage 3: the launches"]
    assert status == "failed" and "gpu.busy_fraction < 0.5" in detail


def test_dev_check_names_a_missing_stage_recording_and_a_missing_reference_stage(tmp_path):
    puzzle = staged_puzzle(tmp_path)
    with_reference_stages(puzzle, COPIES)
    checks = stage_checks(puzzle)
    assert checks["stage 2: the copies"][0] == "failed" and "stage2_metrics.json is missing" in \
        checks["stage 2: the copies"][1]
    assert checks["stage 3: the launches"] == ("failed", "the reference answer.toml has no [[stages]] table for it")


def test_a_stage_shown_by_a_file_the_puzzle_lacks_is_refused(tmp_path):
    with pytest.raises(TutorError, match="shown by alternatives/no.py, which does not exist"):
        staged_puzzle(tmp_path, STAGES.replace('tier = "silver"', 'tier = "silver"\nshown_by = "alternatives/no.py"'))


def test_the_recordings_installer_ships_each_stages_profile(tmp_path):
    from tutor.harness.loading import load_module

    installer = load_module(Path(__file__).parents[1] / "benchmarks" / "install_recordings.py", "installer", ())
    root, results = tmp_path / "repo", tmp_path / "results" / "capstone"
    (root / "challenges" / "capstone").mkdir(parents=True)
    results.mkdir(parents=True)
    for name in ("baseline_metrics.json", "stage2_metrics.json", "stage3_metrics.json"):
        (results / name).write_text(name)
    installer.install(results.parent, "capstone", "an H200 (141 GB HBM3e)", root)
    shipped = sorted(p.name for p in (root / "challenges" / "capstone" / "recordings").iterdir())
    assert shipped == ["baseline_metrics.json", "recorded_on.txt", "stage2_metrics.json", "stage3_metrics.json"]


def test_the_reference_answer_cites_each_stage_from_the_profile_of_the_file_that_shows_it(tmp_path):
    from tutor.reference import install_reference

    puzzle = staged_puzzle(tmp_path)
    with_reference_stages(puzzle, COPIES + LAUNCHES)
    ws_answer = tmp_path / "ws_answer"

    class Workspace:  # the one path install_reference writes
        def editable_path(self, puzzle, name):
            return ws_answer / name

    ws_answer.mkdir()
    stage_values = [{"memcpy.h2d_bytes_per_iter": 5120.0}, {"kernels.per_iter": 310.0}]
    install_reference(Workspace(), puzzle, {"cpu.time_per_iter_us": 7.5}, stage_values=stage_values)
    answer = read_answer(ws_answer / "answer.toml")
    assert answer.evidence[0].value == 7.5
    assert [[(e.metric, e.value) for e in s.evidence] for s in answer.stages] == [
        [("memcpy.h2d_bytes_per_iter", 5120.0)], [("kernels.per_iter", 310.0), ("launch.api_us_per_iter", 900.0)]]


def test_study_mode_checks_a_capstones_stages_against_their_recordings(workspace, tmp_path):
    from tutor.study import recorded_stages

    puzzle = staged_puzzle(tmp_path)
    workspace.editable_path(puzzle, "answer.toml").write_text(
        'bottleneck = "cpu_overhead"\n[[evidence]]\nmetric = "cpu.time_per_iter_us"\nvalue = 1.0\n' + COPIES)
    puzzle.recordings_dir.mkdir(exist_ok=True)
    puzzle.recorded_stage(2).write_text(AFTER_COPIES["metrics_json"])
    second, third = recorded_stages(workspace, puzzle)
    assert second.passed and "not a profile of yours" in second.details[-1]
    assert not third.passed and third.summary == "No recording of this stage ships yet."


def test_ready_to_grade_profiles_each_stages_file_as_the_learners_workload_and_cites_it(workspace, tmp_path):
    """Run for real on a CPU puzzle with two stages shown by its alternative: each stage's file profiled as the
    learner's workload (kept as their own profile of it, which the stages then read), its numbers in the answer."""
    from tutor.reference import ready_to_grade

    shown = STAGES.replace('tier = "silver"', 'tier = "silver"\nshown_by = "alternatives/numpy_vectorised.py"')
    puzzle = staged_puzzle(tmp_path, shown.replace('relevant_metrics = ["memcpy.*"]', 'relevant_metrics = ["cpu.*"]'))
    with_reference_stages(puzzle, COPIES.replace("memcpy.h2d_bytes_per_iter", "cpu.ops_per_iter"))
    ready_to_grade(workspace, puzzle)
    mine = Progress(workspace.db_path).own_profiles(puzzle.id, "mine")
    assert len(mine) == 1  # the one stage that names its file
    cited = read_answer(workspace.editable_path(puzzle, "answer.toml")).stages[0].evidence[0]
    assert cited.value == ProfileMetrics.from_json(mine[0]["metrics_json"]).values["cpu.ops_per_iter"]
    assert workspace.editable_path(puzzle, "workload.py").read_text() == \
        (puzzle.solution_dir / "workload.py").read_text()  # the reference in place again for the grade
    ready_to_grade(workspace, puzzle, reuse_baseline=True)  # a benchmark's next grade: the stage's file unchanged
    assert len(Progress(workspace.db_path).own_profiles(puzzle.id, "mine")) == 1  # its profile reused, not taken again
