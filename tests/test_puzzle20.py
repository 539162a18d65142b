"""puzzle20, A norm that needs a fraction of the machine, as far as the CPU can check it: its kernels compile for
sm_90 without spills; the reference is the baseline's kernel asking for the shared memory its row needs; an SM of
the H100 holds one of the baseline's blocks and eight of the reference's; every style's arithmetic stays well
inside the tolerance. The tiers were set from its grades on an H100 (MEASUREMENTS.md); the kernels are the GPU's
to run.
"""

from __future__ import annotations

import re
import shutil

import pytest
import torch

from conftest import kernel_constant, ptxas_kernel, puzzle_file, relative_l2
from tutor.catalog import get_puzzle

PUZZLE = get_puzzle("puzzle20")
KERNELS = ["baseline.py", "solution/workload.py", "alternatives/registers_only.py"]
# An SM of the H100 (sm_90): its shared memory, the share the runtime reserves for each block, its threads and blocks.
SM_SHARED, RESERVED_A_BLOCK, SM_THREADS, SM_BLOCKS, SM_WARPS = 228 * 1024, 1024, 2048, 32, 64


def norm64(x: torch.Tensor, gain: torch.Tensor, eps: float) -> torch.Tensor:
    """RMSNorm in float64: the rows the baseline's kernel computes, without its rounding."""
    x = x.double()
    return x * torch.rsqrt(x.pow(2).mean(dim=1, keepdim=True) + eps) * gain.double()


def blocks_an_sm_holds(shared_bytes: int, threads: int) -> int:
    return min(SM_SHARED // (shared_bytes + RESERVED_A_BLOCK), SM_THREADS // threads, SM_BLOCKS)


@pytest.mark.skipif(shutil.which("nvcc") is None, reason="needs nvcc (the CUDA toolkit); no GPU")
@pytest.mark.parametrize("workload", KERNELS)
def test_every_kernel_compiles_for_the_h100_and_spills_nothing(tmp_path, workload):
    kernel = ptxas_kernel(tmp_path, PUZZLE, workload)
    assert kernel.spill_store_bytes == 0 and kernel.registers <= 64
    # Registers cap no launch here: an SM's 2048 threads at 32 registers are its 64K (__launch_bounds__(256, 8)).
    assert SM_THREADS * kernel.registers <= 64 * 1024
    assert kernel.shared_bytes <= 64  # the warps' partial sums; the staged row is dynamic


def test_the_reference_is_the_baselines_kernel_asking_for_the_shared_memory_its_row_needs():
    """The lesson is the launch alone: the same kernel, its dynamic shared memory dim floats, not MAX_DIM."""
    baseline, reference = puzzle_file(PUZZLE, "baseline.py"), puzzle_file(PUZZLE, "solution/workload.py")
    assert reference.KERNEL == baseline.KERNEL and reference.BINDING == baseline.BINDING
    asked = [re.search(r"int bytes = (.*?);", w.LAUNCHER).group(1) for w in (baseline, reference)]
    assert asked == ["MAX_DIM * sizeof(float)", "dim * sizeof(float)"]
    assert [l for l in baseline.LAUNCHER.splitlines() if "int bytes" not in l] == \
        [l for l in reference.LAUNCHER.splitlines() if "int bytes" not in l]


def test_an_sm_holds_one_block_of_the_baseline_and_eight_of_the_reference():
    """The story's arithmetic: 128 KB a block leaves room for one on an H100's SM, 8 warps of its 64; 8 KB a block
    lets the threads cap it instead, 8 blocks, every warp slot filled."""
    spec, baseline = puzzle_file(PUZZLE, "spec.py"), puzzle_file(PUZZLE, "baseline.py")
    threads, widest = kernel_constant(baseline.KERNEL, "THREADS"), kernel_constant(baseline.KERNEL, "MAX_DIM")
    before, after = blocks_an_sm_holds(widest * 4, threads), blocks_an_sm_holds(spec.DIM * 4, threads)
    assert (before, after) == (1, 8)
    assert (before * threads // 32 / SM_WARPS, after * threads // 32 / SM_WARPS) == (0.125, 1.0)


def test_every_honest_order_of_sums_stays_well_inside_the_tolerance(monkeypatch):
    """torch's own RMSNorm and the eager formula (the cheats' honest half) in fp32 on the CPU, against float64:
    rounding alone, far inside 1e-5; a norm that skips the gain, or the eps, or divides by the wrong width, misses."""
    spec = puzzle_file(PUZZLE, "spec.py")
    monkeypatch.setattr(spec, "ROWS", 512)
    x, gain = spec.make_input(1, "cpu"), spec.make_weights(2, "cpu")["gain"]
    exact = norm64(x, gain, spec.EPS)
    library = puzzle_file(PUZZLE, "alternatives/library_rms_norm.py")
    eager = x * torch.rsqrt(x.pow(2).mean(dim=1, keepdim=True) + spec.EPS) * gain
    for got in (library.forward(library.prepare({"gain": gain}, "cpu"), x), eager):
        assert relative_l2(got.double(), exact) < PUZZLE.correctness.max_rel_l2 / 10
    wrong = [exact / gain.double(), x.double() * torch.rsqrt(x.double().pow(2).sum(dim=1, keepdim=True) / 2000) * gain]
    assert all(relative_l2(w, exact) > 100 * PUZZLE.correctness.max_rel_l2 for w in wrong)


def test_the_rows_are_wide_enough_and_the_batch_larger_than_l2():
    spec = puzzle_file(PUZZLE, "spec.py")
    assert spec.DIM % 256 == 0 and spec.DIM <= kernel_constant(puzzle_file(PUZZLE, "baseline.py").KERNEL, "MAX_DIM")
    assert spec.ROWS * spec.DIM * 4 > 4 * 50 * 2**20  # 256 MB in: the H100's 50 MB of L2 holds none of it twice
    assert spec.least_work(50 * 2**20)["hbm_bytes"] > 0


@pytest.mark.gpu
@pytest.mark.parametrize("workload", [*KERNELS, "alternatives/triton_rows.py", "alternatives/library_rms_norm.py"])
def test_every_style_normalises_every_row(workload):
    spec, other = puzzle_file(PUZZLE, "spec.py"), puzzle_file(PUZZLE, workload)
    w, x = spec.make_weights(3, "cuda"), spec.make_input(4, "cuda")
    got = other.forward(other.prepare(w, "cuda"), x).cpu().double()
    rel = relative_l2(got, norm64(x.cpu(), w["gain"].cpu(), spec.EPS))
    print(workload, f"relative L2 {rel:.2e}")
    assert rel < PUZZLE.correctness.max_rel_l2
