"""`infprof-tutor dev check`: what a puzzle must be before learners meet it, from its folder and its grades."""

from __future__ import annotations

import itertools
import json
import shutil

import pytest

from conftest import has_cuda
from tutor.catalog import all_puzzles, get_puzzle, load_puzzle
from tutor.cli import main
from tutor.dev_check import run_checks, static_checks

PUZZLE0 = get_puzzle("puzzle0")


def statuses(checks) -> dict[str, str]:
    return {c.name: c.status for c in checks}


def test_every_shipped_puzzle_passes_what_its_folder_can_show(capsys):
    assert main(["dev", "check", "--static"]) == 0, capsys.readouterr().out
    out = capsys.readouterr().out
    assert all(p in out for p in all_puzzles(drafts=True)) and "✗" not in out


@pytest.mark.parametrize("puzzle_id", list(all_puzzles()))
def test_no_folder_check_of_a_shipped_puzzle_is_skipped(puzzle_id):
    """A shipped puzzle has everything a draft may still lack: its recordings, its review notes, its floor."""
    checks = static_checks(get_puzzle(puzzle_id))
    assert all(c.status == "ok" for c in checks), [c for c in checks if c.status != "ok"]


@pytest.fixture
def copy0(tmp_path):
    """An editable copy of puzzle0's folder."""
    folder = tmp_path / "puzzle0"
    shutil.copytree(PUZZLE0.folder, folder)
    return folder


def test_a_puzzle_without_hints_recordings_or_review_notes_is_told_which(copy0):
    toml = (copy0 / "puzzle.toml").read_text()
    start = toml.index("hints = [")
    (copy0 / "puzzle.toml").write_text(toml[:start] + 'hints = ["Profile it."]' + toml[toml.index("]", start) + 1:])
    shutil.rmtree(copy0 / "recordings")
    review = (copy0 / "review.toml").read_text()
    (copy0 / "review.toml").write_text(review[:review.index("[alternatives.compiled]")] + "[alternatives.gone]\nmeasured = 'x'\n")
    checks = {c.name: c for c in static_checks(load_puzzle(copy0))}
    assert checks["metadata"].status == "ok"
    assert checks["hints"].status == "failed" and "1 hints (at least 2)" in checks["hints"].detail
    assert checks["recordings"].status == "failed" and "cpu_baseline_metrics.json is missing" in checks["recordings"].detail
    assert checks["review notes"].status == "failed"
    assert "['compiled']" in checks["review notes"].detail and "['gone']" in checks["review notes"].detail


def test_the_reference_diagnosis_is_checked_against_the_recorded_profile(copy0):
    recording = copy0 / "recordings" / "cpu_baseline_metrics.json"
    data = json.loads(recording.read_text())
    del data["values"]["cpu.ops_per_iter"]  # a metric the reference answer cites
    recording.write_text(json.dumps(data))
    [check] = [c for c in static_checks(load_puzzle(copy0)) if c.name.startswith("reference diagnosis")]
    assert check.status == "failed" and "['cpu.ops_per_iter']" in check.detail


def test_a_broken_puzzle_toml_stops_at_its_metadata(copy0):
    (copy0 / "puzzle.toml").write_text("id = 'puzzle0'\n")
    [check] = static_checks(PUZZLE0.__class__(**{**vars(PUZZLE0), "folder": copy0}))
    assert check.name == "metadata" and check.status == "failed"


def test_the_starter_fails_to_grade_here(small_puzzle0):
    """The runtime checks grade for real: the first of them, the starter's grade (baseline against itself), on
    puzzle0 at 256 rows (tests/conftest.py)."""
    [starter] = itertools.islice(run_checks(small_puzzle0), 1)
    assert starter.name == "starter fails" and starter.status == "ok", starter.detail
    assert starter.detail.startswith("tier none")


@pytest.mark.skipif(has_cuda(), reason="on a GPU machine these grade for real")
def test_gpu_puzzles_are_skipped_here_with_the_reason():
    checks = list(run_checks(get_puzzle("puzzle1")))
    assert [c.name for c in checks] == ["starter fails", "reference reaches gold", "compiled_fp8_gemv reaches silver",
                                        "compiled_kernels_graphed_by_hand reaches silver"]
    assert {c.status for c in checks} == {"skipped"} and all("GPU" in c.detail or "CUDA" in c.detail for c in checks)


def test_a_serving_puzzle_whose_spec_states_no_least_flops_is_told_to(tmp_path):
    """The serving floor needs the FLOPs a trace's requests take (tutor.harness.serving.least_flops)."""
    folder = tmp_path / "puzzle18"
    shutil.copytree(get_puzzle("puzzle18").folder, folder)
    spec = folder / "spec.py"
    assert "def least_flops(" in spec.read_text()
    spec.write_text(spec.read_text().replace("def least_flops(", "def _least_flops(", 1))
    [floor] = [c for c in static_checks(load_puzzle(folder)) if c.name == "floor"]
    assert floor.status == "failed" and "no least_flops(lengths)" in floor.detail
    [ok] = [c for c in static_checks(get_puzzle("puzzle18")) if c.name == "floor"]
    assert ok.status == "ok" and "TFLOP for a trace of 512 requests" in ok.detail


def test_a_multi_gpu_spec_that_reads_a_tensors_value_is_a_finding_not_a_crash(tmp_path):
    """The shards check makes the weights on fake tensors (nothing allocated), where no tensor has a value to read:
    a spec that draws from one is told so, and how to draw instead, as a failed check."""
    folder = tmp_path / "puzzle19"
    shutil.copytree(get_puzzle("puzzle19").folder, folder)
    spec = folder / "spec.py"
    line = "    layers = []\n"
    assert line in spec.read_text()
    spec.write_text(spec.read_text().replace(line, line + "    _ = int(torch.randint(2, (1,), generator=g))\n", 1))
    [shards] = [c for c in static_checks(load_puzzle(folder)) if c.name == "shards"]
    assert shards.status == "failed" and "Python's random" in shards.detail, shards.detail
