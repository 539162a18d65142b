"""puzzle24, The scorer at a tenth of the card (a draft: issue 38's tensor_cores_idle), as far as the CPU can check
it: every honest style's scores land within the tolerance of the baseline's fp32 at a CPU's sizes, with room to
spare; fewer bits than that (fp8 operands) or less work (low-rank weights) miss by several times it; the harness
serves the scene end to end. How fast each runs is the H100's to measure (MEASUREMENTS.md lists what is owed).
"""

from __future__ import annotations

import pytest
import torch

from conftest import puzzle_file, relative_l2
from tutor.catalog import all_puzzles, get_puzzle
from tutor.runner import run_harness

PUZZLE = get_puzzle("puzzle24", drafts=True)
# The tower at a CPU's sizes: sums half the scene's length (bf16's error grows with it; the GPU test has the full one).
SMALL = {"BATCH": 64, "FEATURES": 2048, "HIDDEN": 2048, "SCORES": 256}
HONEST = ["solution/workload.py", "alternatives/bf16_weights.py", "alternatives/autocast_bf16.py"]
CHEATS = ["cheats/fp8_round_trip.py", "cheats/low_rank.py"]


def test_the_puzzle_is_a_draft_until_the_gpu_measures_it():
    assert PUZZLE.draft and "puzzle24" not in all_puzzles()


@pytest.fixture(autouse=True)
def tf32_as_it_was():
    """The reference allows TF32 for the process it runs in: put it back after each test, or the next one's
    baseline (here, or another module's in this test process) would run in TF32 too."""
    was = torch.backends.cuda.matmul.allow_tf32
    yield
    torch.backends.cuda.matmul.allow_tf32 = was


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
    source = (PUZZLE.folder / "spec.py").read_text()
    line = "BATCH, FEATURES, HIDDEN, SCORES = 8192, 4096, 4096, 1024"
    assert line in source
    spec = tmp_path / "spec.py"
    spec.write_text(source.replace(line, "BATCH, FEATURES, HIDDEN, SCORES = 32, 256, 256, 64"))
    request = {"mode": "check", "device": "cpu", "seed": 5, "spec": str(spec),
               "workloads": {"baseline": str(PUZZLE.folder / "baseline.py"),
                             "mine": str(PUZZLE.folder / "solution" / "workload.py")},
               "prepare": ["baseline", "mine"], "time": ["baseline", "mine"], "candidate": "mine",
               "oracle": "baseline", "correctness": {"checks": 1}, "timing": {"warmup": 1, "rounds": 2}}
    result = run_harness(request, tmp_path / "run", 300).result
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
    """sweeps/precisions.py, the measurement owed on the H100, run in-process at a CPU's sizes: every workload it
    lists exists, runs, and reports its error against the baseline's scores (none for the baseline)."""
    sweep = puzzle_file(PUZZLE, "sweeps/precisions.py")
    sizes = {"BATCH": 16, "FEATURES": 128, "HIDDEN": 128, "SCORES": 32}
    figures = {w: sweep.measure(w, 1, "cpu", sizes) for w in sweep.WORKLOADS}
    assert set(figures) >= {"baseline.py", *HONEST, "cheats/fp8_round_trip.py"}
    assert figures["baseline.py"]["rel_l2"] == 0 and figures["cheats/fp8_round_trip.py"]["rel_l2"] > 0.02
    assert all(f["ms_a_call"] > 0 and f["tflops"] > 0 for f in figures.values())
