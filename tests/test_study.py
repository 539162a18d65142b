"""Study mode without a GPU: the puzzle's H100 recordings opened as a profile, and a diagnosis graded on them."""

from __future__ import annotations

import pytest

from tutor import actions
from tutor.catalog import all_puzzles, get_puzzle
from tutor.cli import main
from tutor.errors import TutorError
from tutor.progress import Progress
from tutor.reference import install_reference
from tutor.study import grade_diagnosis, read_recording, recorded_profilers, study

GPU_PUZZLES = [p for p in all_puzzles().values() if p.hardware.device == "cuda"]


@pytest.mark.parametrize("puzzle", GPU_PUZZLES, ids=lambda p: p.id)
def test_every_gpu_puzzle_ships_its_baseline_as_profiled_on_the_h100(puzzle):
    assert "torch" in recorded_profilers(puzzle)
    metrics, trace = read_recording(puzzle, "torch")
    assert metrics.device == "cuda" and metrics.values["kernels.per_iter"] > 0 and trace.is_file()
    if "ncu" in puzzle.profilers:
        assert "ncu" in recorded_profilers(puzzle) and read_recording(puzzle, "ncu")[0].kernels


@pytest.mark.parametrize("puzzle", GPU_PUZZLES, ids=lambda p: p.id)
def test_the_reference_diagnosis_passes_on_the_recording_and_the_puzzle_reads_diagnosed(workspace, puzzle):
    # The reference's answer, citing the recorded numbers (of every profiler recorded: puzzle10's are ncu's),
    # as a learner who studied would.
    recorded = {k: v for p in recorded_profilers(puzzle) for k, v in read_recording(puzzle, p)[0].values.items()}
    install_reference(workspace, puzzle, recorded, without={"kernel_evidence", "autotune"})
    verdict = grade_diagnosis(workspace, puzzle)
    assert verdict.passed, verdict.criteria[0].details
    assert Progress(workspace.db_path).status(puzzle.id).status == "diagnosed"


def test_a_wrong_diagnosis_is_recorded_and_does_not_count(workspace):
    puzzle = get_puzzle("puzzle1")
    workspace.editable_path(puzzle, "answer.toml").write_text(
        'bottleneck = "cpu_overhead"\n\n[[evidence]]\nmetric = "kernels.per_iter"\nvalue = 1\n')
    verdict = grade_diagnosis(workspace, puzzle)
    assert not verdict.passed and "not a profile of yours" in verdict.criteria[0].details[-1]
    progress = Progress(workspace.db_path)
    assert progress.status("puzzle1").status == "new"
    assert [r["passed"] for r in progress.db["diagnoses"].rows] == [0]


def test_a_recording_opened_is_never_the_learners_own_evidence(workspace):
    """A full grade's diagnosis reads the learner's own profiles: a studied recording is not one."""
    puzzle = get_puzzle("puzzle1")
    outcome = study(workspace, puzzle)
    assert outcome.trace_path.is_file() and outcome.trace_path.parent == outcome.run_dir
    progress = Progress(workspace.db_path)
    assert progress.latest_profiles("puzzle1", "baseline") == []
    [row] = progress.latest_profiles("puzzle1", "baseline", source="recorded")
    assert row["profiler"] == "torch"
    install_reference(workspace, puzzle, outcome.metrics.values)
    criterion = actions._diagnose(workspace, puzzle, progress)
    assert not criterion.passed and "profile" in criterion.summary.lower()


def test_a_puzzle_that_runs_here_has_nothing_to_study(workspace):
    with pytest.raises(TutorError, match="no recordings"):
        study(workspace, get_puzzle("puzzle0"))


def test_the_cli_opens_the_recording_then_grades_the_diagnosis(workspace, monkeypatch, capsys):
    monkeypatch.chdir(workspace.root)
    assert main(["study", "puzzle3", "--profiler", "ncu"]) == 0
    out = capsys.readouterr().out
    assert "as profiled on an H100" in out and "Nsight Compute's raw page of the recorded report" in out
    assert "column -s, -t <" in out and "study puzzle3 --check" in out
    assert main(["study", "puzzle3", "--check"]) == 1  # the starter answer names nothing yet
    assert "Not diagnosed yet" in capsys.readouterr().out
    assert main(["list"]) == 0
    assert "diagnosed" not in capsys.readouterr().out


def test_a_recording_made_on_another_card_says_which(workspace, monkeypatch, capsys, tmp_path):
    """A baseline recorded on another card (puzzle11's was an H200's until an H100 recorded it again): study mode
    says so, in what it prints and in the diagnosis it grades; the others name the H100. Here puzzle11's
    recordings, copied, carry the note it shipped with then."""
    import shutil

    from tutor.catalog import Puzzle
    from tutor.study import RECORDED_ON, RECORDED_ON_FILE, recorded_on

    copy = tmp_path / "recordings"
    shutil.copytree(get_puzzle("puzzle11").recordings_dir, copy)
    note = "an H200 (141 GB HBM3e; the H100's GH100 SMs and L2), torch 2.11 with CUDA 13.0"
    (copy / RECORDED_ON_FILE).write_text(note + "\n")
    shipped = Puzzle.recordings_dir.fget
    monkeypatch.setattr(Puzzle, "recordings_dir", property(lambda p: copy if p.id == "puzzle11" else shipped(p)))
    assert recorded_on(get_puzzle("puzzle10")) == RECORDED_ON
    monkeypatch.chdir(workspace.root)
    assert main(["study", "puzzle11"]) == 0
    assert "as profiled on an H200" in capsys.readouterr().out
    puzzle = get_puzzle("puzzle11")
    recorded = {k: v for p in recorded_profilers(puzzle) for k, v in read_recording(puzzle, p)[0].values.items()}
    install_reference(workspace, puzzle, recorded, without={"kernel_evidence", "autotune"})
    criterion = grade_diagnosis(workspace, puzzle).criteria[0]
    assert any("recorded on an H200" in d for d in criterion.details)


def test_a_device_calls_recordings_replace_another_cards_in_the_puzzle_folder(tmp_path):
    """benchmarks/install_recordings.py: the new card's baseline recordings (each profiler's the registry records,
    and the trace) over the old card's, the reference's ncu export as the puzzle's card-neutral fixture, and the
    note naming the card the recordings came from."""
    from pathlib import Path

    from tutor.harness.loading import load_module

    script = Path(__file__).parents[1] / "benchmarks" / "install_recordings.py"
    installer = load_module(script, "install_recordings", ())
    root, results = tmp_path / "repo", tmp_path / "results"
    recordings = root / "challenges" / "puzzle11" / "recordings"
    recordings.mkdir(parents=True)
    (root / "tests" / "fixtures").mkdir(parents=True)
    (recordings / "recorded_on.txt").write_text("an H200\n")
    (recordings / "baseline_ncu.csv").write_text("the H200's\n")
    (results / "puzzle11").mkdir(parents=True)
    recorded = installer.recorded_files()
    assert {"baseline_metrics.json", "baseline_ncu.csv", "baseline_memory_metrics.json",
            "baseline_trace.json.gz"} == set(recorded)
    for name in ("baseline_metrics.json", "baseline_ncu.csv", "baseline_trace.json.gz", "reference_ncu.csv"):
        (results / "puzzle11" / name).write_text(f"new {name}\n")
    done = installer.install(results, "puzzle11", "an H100 (80 GB HBM3)", root)
    assert (recordings / "baseline_ncu.csv").read_text() == "new baseline_ncu.csv\n"
    assert (root / "tests" / "fixtures" / "puzzle11_reference_ncu.csv").read_text() == "new reference_ncu.csv\n"
    assert (recordings / "recorded_on.txt").read_text() == "an H100 (80 GB HBM3)\n" and len(done) == 5
    assert not (recordings / "baseline_memory_metrics.json").exists()  # puzzle11 lists no memory profiler
    with pytest.raises(SystemExit, match="no baseline_metrics.json"):
        installer.install(results, "puzzle12", "an H100", root)


def test_a_device_call_grades_each_solution_it_names_as_many_times_as_it_says():
    """benchmarks/measure_draft.py --which: NAME=N grades NAME N times, a bare NAME the call's GRADES; no --which,
    every solution GRADES times and the baseline twice, last; a name the puzzle does not list, refused up front."""
    from pathlib import Path

    from tutor.harness.loading import load_module

    draft = load_module(Path(__file__).parents[1] / "benchmarks" / "measure_draft.py", "measure_draft", ())
    puzzle = get_puzzle("puzzle14")
    assert draft.planned_runs(puzzle, 1, "reference=3,alternatives/triton_sorted") == \
        [("reference", 3), ("alternatives/triton_sorted", 1)]
    every = draft.planned_runs(puzzle, 5, "")
    assert every[0] == ("reference", 5) and every[-1] == ("baseline", 2) and len(every) == 2 + len(puzzle.alternatives)
    # A name the puzzle does not list stops the call before its first grade, naming what it takes.
    with pytest.raises(SystemExit, match="puzzle14 lists no alternatives/triton_sortd: --which takes .*reference"):
        draft.planned_runs(puzzle, 5, "reference=5,alternatives/triton_sortd=5")
