"""puzzle11, A textbook matmul, DRAM nearly idle, as far as the CPU can check it: every kernel compiles for sm_90
alike (only Nsight Compute tells them apart); the reference is the baseline with its tile rows padded and
nothing else; the library's matmul is the projection within the tolerance and a 16-bit trip is not; its
recordings show one kernel waiting on shared memory (its folder: tests/test_dev_check.py). The tiers were
set on an H200 (the H100's SMs; MEASUREMENTS.md); the kernels are the GPU's to run.
"""

from __future__ import annotations

import shutil

import pytest

from conftest import ptxas_kernel, puzzle_file, reference_ncu, relative_l2
from tutor.catalog import get_puzzle
from tutor.metrics import ProfileMetrics
from tutor.profilers import ncu

PUZZLE = get_puzzle("puzzle11")
KERNELS = ["baseline.py", "solution/workload.py", "alternatives/columns_across_lanes.py"]


@pytest.mark.skipif(shutil.which("nvcc") is None, reason="needs nvcc (the CUDA toolkit); no GPU")
@pytest.mark.parametrize("workload", KERNELS)
def test_every_kernel_compiles_for_the_h100_alike_and_spills_nothing(tmp_path, workload):
    """The styles differ in where a warp's shared loads land, not in registers or spills: ptxas sees the same
    kernel, and only Nsight Compute on the GPU can tell them apart."""
    kernel = ptxas_kernel(tmp_path, PUZZLE, workload)
    assert kernel.spill_store_bytes == 0 and kernel.registers <= 32  # 1024 threads a block: 64 registers at most


def test_the_reference_is_the_baseline_with_its_tile_rows_padded():
    """The lesson is the padding alone: the reference's kernel is the baseline's but for the x tile's row length."""
    import difflib

    def code(relative: str) -> list[str]:  # the kernel's lines without their comments
        lines = (line.split("//")[0].strip() for line in puzzle_file(PUZZLE, relative).KERNEL.splitlines())
        return [line for line in lines if line]

    changed = [line for line in difflib.unified_diff(code("baseline.py"), code("solution/workload.py"), lineterm="", n=0)
               if line[:1] in "+-" and not line.startswith(("+++", "---"))]
    assert changed == ["-__shared__ float xs[T][T];", "+__shared__ float xs[T][T + 1];"]


def test_the_library_matmul_is_the_projection_within_tolerance():
    spec, library = puzzle_file(PUZZLE, "spec.py"), puzzle_file(PUZZLE, "alternatives/library_matmul.py")
    w, x = spec.make_weights(1, "cpu"), spec.make_input(2, "cpu")
    exact = (x.double() @ w["w"].double()).float()
    got = library.forward(library.prepare(w, "cpu"), x)
    assert got.shape == (spec.N, spec.N)
    assert relative_l2(got, exact) < PUZZLE.correctness.max_rel_l2 / 10
    # A 16-bit trip fails the tolerance: the kernel's precision is not the question.
    bf16 = (x.bfloat16().float() @ w["w"].bfloat16().float())
    assert relative_l2(bf16, exact) > 10 * PUZZLE.correctness.max_rel_l2


def test_its_recordings_show_one_kernel_waiting_on_the_shared_memory_pipe():
    """What the story and hints ask the learner to find: one kernel, DRAM idle, and under Nsight Compute
    7 wavefronts a shared load (the compiler reads four floats a load, LDS.128, all from one bank group)
    with the warps stalled on the shared-memory pipe (mio_throttle); the padded reference's 1."""
    import tomllib

    assert not PUZZLE.draft  # it ships: tests/test_dev_check.py checks its whole folder
    recorded = ProfileMetrics.from_json((PUZZLE.recordings_dir / "baseline_metrics.json").read_text())
    assert recorded.kernels[0]["name"] == "project" and recorded.kernels[0]["share"] > 0.99
    baseline = ncu.extract(PUZZLE.recordings_dir / "baseline_ncu.csv").values
    reference = ncu.extract(reference_ncu("puzzle11")).values
    assert baseline["ncu.shared_wavefronts_per_load"] > 5 and reference["ncu.shared_wavefronts_per_load"] < 1.05
    assert baseline["ncu.shared_load_bank_conflicts"] > 1000 * reference["ncu.shared_load_bank_conflicts"]
    assert baseline["ncu.dram_throughput_pct"] < 1 and baseline["ncu.stall.mio_throttle"] > 10 * baseline[
        "ncu.stall.long_scoreboard"]
    cited = tomllib.loads((PUZZLE.solution_dir / "answer.toml").read_text())["kernel_evidence"]["metric"]
    assert baseline[cited] > 5 * reference[cited]


@pytest.mark.gpu
@pytest.mark.parametrize("workload", [*KERNELS, "alternatives/library_matmul.py"])
def test_every_style_computes_the_projection(workload):
    spec, other = puzzle_file(PUZZLE, "spec.py"), puzzle_file(PUZZLE, workload)
    w = spec.make_weights(3, "cuda")
    x = spec.make_input(4, "cuda")
    exact = (x.double() @ w["w"].double()).float()
    got = other.forward(other.prepare(w, "cuda"), x)
    rel = relative_l2(got, exact)
    print(workload, f"relative L2 {rel:.2e}")
    assert rel < PUZZLE.correctness.max_rel_l2
