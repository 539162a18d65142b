"""puzzle24, The scorer at a tenth of the card (issue 38's tensor_cores_idle): every honest style's scores
land within the tolerance of the baseline's fp32 at a CPU's sizes, with room to spare; fewer bits than that (fp8
operands) or less work (low-rank weights) miss by several times it; the harness serves the scene end to end; one
H200's grades and one H100's, kept as fixtures, read the tiers puzzle.toml sets.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import torch

from conftest import (assert_each_cheat_refused, graded_counts, harness_check, puzzle_file, relative_l2,
                      resized_copies)
from test_grading_rules import assert_clear_of_every_bar
from tutor.catalog import all_puzzles, get_puzzle

pytestmark = pytest.mark.bf16_products_exact  # its scene's bf16 products, sooner (tests/conftest.py)

PUZZLE = get_puzzle("puzzle24")
# The tower at a CPU's sizes: sums half the scene's length (bf16's error grows with it; the GPU test has the full one).
SMALL = {"BATCH": 64, "FEATURES": 2048, "HIDDEN": 2048, "SCORES": 256}
HONEST = ["solution/workload.py", "alternatives/tf32_matmul.py", "alternatives/autocast_bf16.py",
          "alternatives/matmul_precision_medium.py"]
CHEATS = ["cheats/fp8_round_trip.py", "cheats/low_rank.py"]
FIXTURES = Path(__file__).parent / "fixtures"


def test_the_puzzle_ships():
    assert not PUZZLE.draft and "puzzle24" in all_puzzles()


def test_an_h200s_and_an_h100s_grades_read_the_tiers_with_every_bar_7_to_10_percent_higher_or_lower():
    """Five grades of each honest style on one H200 (`benchmarks/measure_draft.py puzzle24 ...`, three device calls):
    TF32, asked for either way, silver (5.8x); bf16 operands gold, cast every call under autocast (8.4x) or the
    weights once (12.9x). One of each on one H100 (`benchmarks/device_grading.sh stability:puzzle24:1
    alt:puzzle24:1:NAME ...`): TF32 silver (5.47x, 5.46x), autocast gold (7.58x), the reference gold (12.32x).
    Each with every bar 10% either way on the H200, 7% on the H100 (autocast's 7.55 lower bound sits 8% over gold's
    7.0, TF32's 5.45 9% over silver's 5.0)."""
    h200 = json.loads((FIXTURES / "grades_puzzle24_2026-11-28.json").read_text())
    h100 = json.loads((FIXTURES / "grades_puzzle24_2026-12-06.json").read_text())
    assert graded_counts(h200) == {"reference": 5, **{f"alternatives/{name}": 5 for name in PUZZLE.alternatives}}
    assert graded_counts(h100) == {"reference": 1, **{f"alternatives/{name}": 1 for name in PUZZLE.alternatives}}
    assert {g["card"] for g in h100} == {"NVIDIA H100 80GB HBM3"}
    assert_clear_of_every_bar(h200)
    assert_clear_of_every_bar(h100, margin=0.07)


def test_an_h200_refused_every_cheat_three_times_and_an_h100_once():
    """`benchmarks/grade_cheats.py puzzle24 --runs 3` on one H200, `--runs 1` on one H100: fp8 operands (5.4x, 4.8x
    on the H100) and low-rank weights (3.7x, 3.6x) refused at correctness, the workload that blanks the calls it
    takes for unchecked (26x) at correctness and by the physical floor."""
    refusals = {"cheats/fp8_round_trip": {"correctness"}, "cheats/low_rank": {"correctness"},
                "cheats/reads_which_call_is_checked": {"correctness", "physical floor"}}
    assert_each_cheat_refused(PUZZLE, FIXTURES / "cheats_puzzle24_2026-11-28.json", refusals, times=3)
    assert_each_cheat_refused(PUZZLE, FIXTURES / "cheats_puzzle24_2026-12-06.json", refusals, times=1)


@pytest.fixture(autouse=True)
def matmul_precision_as_it_was():
    """Two alternatives lower the fp32 matrix products' precision for the process they run in: put it back after
    each test, or the next one's baseline (here, or another module's in this test process) would run so too."""
    tf32, precision = torch.backends.cuda.matmul.allow_tf32, torch.get_float32_matmul_precision()
    yield
    torch.set_float32_matmul_precision(precision)
    torch.backends.cuda.matmul.allow_tf32 = tf32


@pytest.fixture(scope="module")
def scene():
    spec = puzzle_file(PUZZLE, "spec.py")
    for name, value in SMALL.items():
        setattr(spec, name, value)
    weights, x = spec.make_weights(3, "cpu"), spec.make_input(4, "cpu")
    baseline = puzzle_file(PUZZLE, "baseline.py")
    return weights, x, baseline.forward(baseline.prepare(weights, "cpu"), x).double()


def scores(workload: str, weights: dict, x: torch.Tensor) -> torch.Tensor:
    module = puzzle_file(PUZZLE, workload)
    return module.forward(module.prepare(dict(weights), "cpu"), x).double()


@pytest.mark.parametrize("workload", HONEST)
def test_every_honest_style_keeps_the_scores_well_inside_the_tolerance(scene, workload):
    weights, x, expected = scene
    got = scores(workload, weights, x)
    assert got.dtype == torch.float64 and got.shape == expected.shape == (SMALL["BATCH"], SMALL["SCORES"])
    rel = relative_l2(got, expected)
    print(workload, f"relative L2 {rel:.2e}")
    assert rel < PUZZLE.correctness.max_rel_l2 / 2


@pytest.mark.parametrize("workload", CHEATS)
def test_fewer_bits_or_less_work_miss_by_several_times_the_tolerance(scene, workload):
    weights, x, expected = scene
    rel = relative_l2(scores(workload, weights, x), expected)
    print(workload, f"relative L2 {rel:.2e}")
    assert rel > 2 * PUZZLE.correctness.max_rel_l2


def test_the_harness_serves_the_scene_and_checks_every_call(tmp_path):
    """Graded as the GPU grades it, at a CPU's sizes: the reference right on every check and every timed call."""
    small = {"BATCH, FEATURES, HIDDEN, SCORES = 8192, 4096, 4096, 1024":
             "BATCH, FEATURES, HIDDEN, SCORES = 32, 256, 256, 64"}
    spec = resized_copies(PUZZLE, ["spec.py"], small, tmp_path)["spec.py"]
    result = harness_check(PUZZLE, "solution/workload.py", tmp_path, spec=spec)
    errors = [c.get("rel_l2", float("inf")) for c in result["checks"] + result["timed_checks"]]
    assert len(result["timed_checks"]) >= 4 and max(errors) <= PUZZLE.correctness.max_rel_l2, errors
    assert not result["violations"]


def test_the_floor_is_the_towers_multiply_adds():
    spec = puzzle_file(PUZZLE, "spec.py")
    assert spec.least_work(50 * 2**20)["flops"] == 2 * 8192 * (4096 * 4096 * 2 + 4096 * 1024)


@pytest.mark.gpu
@pytest.mark.parametrize("workload", HONEST + CHEATS)
def test_every_style_against_the_baseline_on_the_gpu_at_the_scenes_sizes(workload):
    """The tolerance, set from the CPU, against what the GPU's kernels make of the real scene: the honest styles
    inside it with room to spare, the cheats outside."""
    spec = puzzle_file(PUZZLE, "spec.py")
    weights, x = spec.make_weights(1, "cuda"), spec.make_input(2, "cuda")
    baseline = puzzle_file(PUZZLE, "baseline.py")
    expected = baseline.forward(baseline.prepare(weights, "cuda"), x).double().cpu()
    module = puzzle_file(PUZZLE, workload)
    rel = relative_l2(module.forward(module.prepare(dict(weights), "cuda"), x).double().cpu(), expected)
    print(workload, f"relative L2 against the baseline {rel:.2e}")
    limit = PUZZLE.correctness.max_rel_l2
    assert rel < limit / 2 if workload in HONEST else rel > 2 * limit


def test_its_sweep_measures_every_workload_against_the_baseline():
    """sweeps/precisions.py, run in-process at a CPU's sizes: every workload it
    lists exists, runs, and reports its error against the baseline's scores (none for the baseline)."""
    sweep = puzzle_file(PUZZLE, "sweeps/precisions.py")
    sizes = {"BATCH": 16, "FEATURES": 128, "HIDDEN": 128, "SCORES": 32}
    figures = {w: sweep.measure(w, 1, "cpu", sizes) for w in sweep.WORKLOADS}
    assert set(figures) >= {"baseline.py", *HONEST, "cheats/fp8_round_trip.py"}
    assert figures["baseline.py"]["rel_l2"] == 0 and figures["cheats/fp8_round_trip.py"]["rel_l2"] > 0.02
    assert all(f["ms_a_call"] > 0 and f["tflops"] > 0 for f in figures.values())
