"""puzzle21, Six times the weights' time, as far as the CPU can check it: its kernels compile for
sm_90 without spills; the reference is the baseline's kernel over fewer shares; the blocks' arithmetic, run as
torch ops on the CPU, stays well inside the tolerance and a wrong sum does not; the partial sums the baseline
stores are the bytes the story says, and the H100's Nsight Compute exports (its recording, and the reference's
fixture) count them. The H100's grades are read by tests/test_grading_rules.py and test_cheats.py.
"""

from __future__ import annotations

import shutil

import pytest
import torch

from conftest import kernel_constant, ptxas_kernel, puzzle_file, reference_ncu, relative_l2
from tutor.catalog import get_puzzle
from tutor.profilers import ncu

PUZZLE = get_puzzle("puzzle21")
KERNELS = ["baseline.py", "solution/workload.py", "alternatives/atomic_splits.py"]
SOURCE = puzzle_file(PUZZLE, "baseline.py").KERNEL
TILE, SLAB = kernel_constant(SOURCE, "T"), kernel_constant(SOURCE, "SLAB")  # a block's tile side; features a stage
THREADS = (TILE // kernel_constant(SOURCE, "R")) ** 2  # each thread an R x R square of the tile


def split_sum(x: torch.Tensor, w: torch.Tensor, splits: int) -> torch.Tensor:
    """What the kernels compute, in fp32 on the CPU: each share of the features summed on its own (a block's
    partial sum), then the shares added in order (torch's sum over the partials, or the atomics in some order)."""
    shares = x.shape[1] // splits
    partial = torch.stack([x[:, s * shares:(s + 1) * shares] @ w[s * shares:(s + 1) * shares] for s in range(splits)])
    return partial.sum(0)


@pytest.mark.skipif(shutil.which("nvcc") is None, reason="needs nvcc (the CUDA toolkit); no GPU")
@pytest.mark.parametrize("workload", KERNELS)
def test_every_kernel_compiles_for_the_h100_and_spills_nothing(tmp_path, workload):
    kernel = ptxas_kernel(tmp_path, PUZZLE, workload)
    assert kernel.spill_store_bytes == 0 and kernel.stack_frame_bytes == 0
    # Four blocks of 256 threads an SM: 64K registers hold them at 64 registers a thread.
    assert 4 * THREADS * kernel.registers <= 64 * 1024
    assert kernel.shared_bytes == SLAB * (TILE + 4) * 4 + SLAB * TILE * 4  # x's tile (4 floats of padding a row), w's


def test_the_reference_is_the_baselines_kernel_over_fewer_shares():
    """The lesson is the split alone: the same kernel and launcher, SPLITS 8 instead of 256."""
    baseline, reference = puzzle_file(PUZZLE, "baseline.py"), puzzle_file(PUZZLE, "solution/workload.py")
    sources = lambda w: (w.KERNEL, w.LAUNCHER, w.BINDING)  # the CUDA source's two parts and torch's side
    assert sources(reference) == sources(baseline)
    assert (baseline.SPLITS, reference.SPLITS) == (256, 8)
    atomic = puzzle_file(PUZZLE, "alternatives/atomic_splits.py")
    assert atomic.SPLITS == 8 and "atomicAdd(&out[" in atomic.KERNEL and "torch::zeros" in atomic.BINDING
    main_loop = lambda kernel: kernel[kernel.index("float acc[R][R]"):kernel.index("// this block's share")]
    assert main_loop(atomic.KERNEL) == main_loop(baseline.KERNEL)  # the atomics change only where a share goes


def test_every_split_divides_the_features_into_whole_slabs_and_the_grid_fills_the_gpu():
    spec = puzzle_file(PUZZLE, "spec.py")
    assert spec.TOKENS % TILE == 0 and spec.OUTPUTS % TILE == 0
    for workload in KERNELS:
        splits = puzzle_file(PUZZLE, workload).SPLITS
        assert spec.FEATURES % (splits * SLAB) == 0, workload
        blocks = (spec.OUTPUTS // TILE) * (spec.TOKENS // TILE) * splits
        assert blocks >= 132 * 3, (workload, blocks)  # three blocks or more on each of the H100's 132 SMs


def test_the_partial_sums_are_the_bytes_the_story_says():
    """The baseline stores a tile of partial sums a block: 256 MB, twice the weights, read back by the sum; the
    reference's 8 shares store 8 MB. out itself is 1 MB."""
    spec = puzzle_file(PUZZLE, "spec.py")
    out_bytes = spec.TOKENS * spec.OUTPUTS * 4
    weights = spec.FEATURES * spec.OUTPUTS * 4
    partials = {w: puzzle_file(PUZZLE, w).SPLITS * out_bytes for w in ("baseline.py", "solution/workload.py")}
    assert (out_bytes, weights) == (2**20, 2**27)
    assert partials == {"baseline.py": 2**28, "solution/workload.py": 2**23}
    assert partials["baseline.py"] // 32 == 8 * 2**20  # sectors of 32 bytes: 8M, against out's 32K
    assert spec.least_work(50 * 2**20)["hbm_bytes"] > 0  # the weights are more than the H100's L2 holds


def test_the_h100s_profiles_count_the_partial_sums_through_dram():
    """Nsight Compute on the H100 (the baseline's recording; the reference's export, tests/fixtures): the baseline's
    projection stores 8M sectors (256 MB of partial sums, where out needs 32K) and writes three times the weights'
    bytes to and from DRAM, and the sum that reads them back takes near a third of the GPU's time; over 8 shares the
    projection stores 8 MB, moves little more than the weights, and the sum is a sliver."""
    kernels = {which: {k["name"]: k for k in ncu.extract(path).kernels}
               for which, path in (("baseline", PUZZLE.recordings_dir / "baseline_ncu.csv"),
                                   ("reference", reference_ncu("puzzle21")))}
    weights = 2**27
    baseline, reference = kernels["baseline"], kernels["reference"]
    assert baseline["project"]["global_store_sectors"] == 8 * 2**20 and reference["project"]["global_store_sectors"] == 2**18
    assert baseline["project"]["dram_bytes"] > 2.5 * weights and reference["project"]["dram_bytes"] < 1.2 * weights
    assert baseline["at::reduce_kernel"]["global_load_sectors"] == 8 * 2**20
    assert 0.25 < baseline["at::reduce_kernel"]["share"] < 0.4 and reference["at::reduce_kernel"]["share"] < 0.1
    assert reference["project"]["total_us"] < baseline["project"]["total_us"]


def test_every_honest_order_of_sums_stays_well_inside_the_tolerance_and_a_wrong_one_does_not():
    """The shares' sums in fp32 (256 of them, 8, or one library GEMM), against float64 at the spec's sizes cut to
    8 tokens: rounding alone, far inside 1e-5. TF32's rounding, or a sum that drops one share, misses it."""
    spec = puzzle_file(PUZZLE, "spec.py", {"TOKENS": 8})
    x, w = spec.make_input(1, "cpu"), spec.make_weights(2, "cpu")["w"]
    exact = x.double() @ w.double()
    library = puzzle_file(PUZZLE, "alternatives/library_matmul.py")
    for got in (split_sum(x, w, 256), split_sum(x, w, 8), library.forward(library.prepare({"w": w}, "cpu"), x)):
        assert relative_l2(got, exact) < PUZZLE.correctness.max_rel_l2 / 10
    tf32 = lambda t: (t.view(torch.int32) & ~0x1FFF).view(torch.float32)  # 10 mantissa bits, as TF32 keeps
    dropped = split_sum(x, w, 256) - x[:, :32] @ w[:32]
    assert relative_l2(tf32(x) @ tf32(w), exact) > PUZZLE.correctness.max_rel_l2
    assert relative_l2(dropped, exact) > 10 * PUZZLE.correctness.max_rel_l2


@pytest.mark.gpu
@pytest.mark.parametrize("workload", [*KERNELS, "alternatives/library_matmul.py"])
def test_every_style_projects_every_token(workload):
    spec, other = puzzle_file(PUZZLE, "spec.py"), puzzle_file(PUZZLE, workload)
    w, x = spec.make_weights(3, "cuda"), spec.make_input(4, "cuda")
    got = other.forward(other.prepare(w, "cuda"), x).cpu().double()
    rel = relative_l2(got, x.cpu().double() @ w["w"].cpu().double())
    print(workload, f"relative L2 {rel:.2e}")
    assert rel < PUZZLE.correctness.max_rel_l2
