"""puzzle15, Six percent more work, twice the time, as far as the CPU can check it: its blocks hold an SM
alone, 136 of them; the reference is the baseline's kernel over a finer grid; split-K's sums meet the
tolerance and a 16-bit trip does not; its recordings show 1.03 waves against split-K's 16.5. The tiers
were set on an H200 (the H100's SMs; MEASUREMENTS.md); the kernels are the GPU's to run.
"""

from __future__ import annotations

import math
import shutil

import pytest
import torch

from conftest import kernel_constant, ptxas_kernel, puzzle_file, reference_ncu, relative_l2
from tutor.catalog import get_puzzle

PUZZLE = get_puzzle("puzzle15")
KERNELS = ["baseline.py", "solution/workload.py", "alternatives/split_k_atomics.py"]
H100_SMS = 132


@pytest.mark.skipif(shutil.which("nvcc") is None, reason="needs nvcc (the CUDA toolkit); no GPU")
@pytest.mark.parametrize("workload", KERNELS)
def test_every_kernel_holds_an_sm_alone_and_spills_nothing(tmp_path, workload):
    """One block an SM by both of its limits: its registers (1024 threads of a 65536-register file) and its
    133 KB of shared memory (an H100 SM has 228 KB), so the grid's waves are its blocks over 132."""
    module = puzzle_file(PUZZLE, workload)
    kernel = ptxas_kernel(tmp_path, PUZZLE, workload)
    assert kernel.spill_store_bytes == 0 and 32 < kernel.registers <= 64  # 64 x 1024 = the whole file
    t, slab = (kernel_constant(module.KERNEL, name) for name in ("T", "SLAB"))
    assert 228 * 1024 // 2 < (t * (slab + 1) + slab * (t + 1)) * 4 <= 227 * 1024


def test_the_reference_runs_the_baselines_kernel_over_a_finer_grid():
    """The lesson is the cut alone: the reference's kernel and launcher are the baseline's, to the byte; its
    splits divide the features into whole slabs and make the last wave short."""
    spec, baseline, reference = (puzzle_file(PUZZLE, f) for f in ("spec.py", "baseline.py", "solution/workload.py"))
    sources = lambda w: (w.KERNEL, w.LAUNCHER, w.BINDING)  # the CUDA source's two parts and torch's side
    assert sources(reference) == sources(baseline)
    slab = kernel_constant(baseline.KERNEL, "SLAB")
    tiles = (spec.N // 32) * (spec.M // 32)
    assert spec.N % 32 == spec.M % 32 == 0 and tiles == 136 and (spec.BASE // 32) * (spec.M // 32) <= H100_SMS < tiles
    assert spec.K % (reference.SPLITS * slab) == 0
    waves = tiles * reference.SPLITS / H100_SMS
    assert math.ceil(waves) / waves < 1.05 < 2 * H100_SMS / tiles  # a sliver of a tail against a second wave


def test_split_k_sums_meet_the_tolerance_and_a_16_bit_trip_does_not():
    """fp32 partial products over 16 splits, added afterwards (the reference's arithmetic), and cuBLAS's fp32
    matmul (alternatives/library_matmul), against the float64 product; bf16 inputs miss by far."""
    spec, library = puzzle_file(PUZZLE, "spec.py"), puzzle_file(PUZZLE, "alternatives/library_matmul.py")
    reference = puzzle_file(PUZZLE, "solution/workload.py")
    w, x = spec.make_weights(1, "cpu"), spec.make_input(2, "cpu")
    exact = x.double() @ w["w"].double()
    splits = reference.SPLITS
    partials = torch.stack([xs @ ws for xs, ws in zip(x.chunk(splits, 1), w["w"].chunk(splits, 0))])
    assert relative_l2(partials.sum(0), exact) < PUZZLE.correctness.max_rel_l2 / 10
    assert relative_l2(library.forward(library.prepare(w, "cpu"), x), exact) < PUZZLE.correctness.max_rel_l2 / 10
    bf16 = x.bfloat16().float() @ w["w"].bfloat16().float()
    assert relative_l2(bf16, exact) > 10 * PUZZLE.correctness.max_rel_l2


@pytest.mark.gpu
@pytest.mark.parametrize("workload", [*KERNELS, "alternatives/library_matmul.py"])
def test_every_style_computes_the_projection(workload):
    spec, other = puzzle_file(PUZZLE, "spec.py"), puzzle_file(PUZZLE, workload)
    w, x = spec.make_weights(3, "cuda"), spec.make_input(4, "cuda")
    exact = (x.double() @ w["w"].double()).cpu()
    got = other.forward(other.prepare(w, "cuda"), x).cpu()
    print(workload, f"relative L2 {relative_l2(got, exact):.2e}")
    assert got.shape == (spec.M, spec.N) and relative_l2(got, exact) < PUZZLE.correctness.max_rel_l2


def test_its_recordings_show_one_wave_and_a_sliver():
    """What the hints send the learner to find (recorded on an H200, MEASUREMENTS.md): one kernel of 1.03 waves,
    the SMs busy 43% of its time; split 16 ways, 16.5 waves and 77%."""
    import tomllib

    from tutor.metrics import ProfileMetrics
    from tutor.profilers import ncu

    assert not PUZZLE.draft  # it ships: tests/test_dev_check.py checks its whole folder
    recorded = ProfileMetrics.from_json((PUZZLE.recordings_dir / "baseline_metrics.json").read_text())
    assert recorded.kernels[0]["name"] == "project" and recorded.kernels[0]["share"] > 0.99
    baseline = ncu.extract(PUZZLE.recordings_dir / "baseline_ncu.csv").values
    reference = ncu.extract(reference_ncu("puzzle15")).values
    assert 1 < baseline["ncu.waves_per_sm"] < 1.1 and reference["ncu.waves_per_sm"] > 15
    assert baseline["ncu.sm_throughput_pct"] < 50 and baseline["ncu.dram_throughput_pct"] < 5
    cited = tomllib.loads((PUZZLE.solution_dir / "answer.toml").read_text())["kernel_evidence"]["metric"]
    assert reference[cited] > 1.5 * baseline[cited]
