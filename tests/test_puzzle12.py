"""puzzle12, A transpose at a fraction of DRAM's speed, as far as the CPU can check it: its kernels compile for sm_90
without spills; torch's copy of a transposed view is the keys exactly (a style that earns no tier: it reads
with the baseline's stride); its recordings show 32 sectors a global load against the tile's 4. The tiers
were set on an H200 (the H100's SMs and L2; MEASUREMENTS.md); the kernels are the GPU's to run.
"""

from __future__ import annotations

import shutil

import pytest
import torch

from conftest import ptxas_kernel, puzzle_file, reference_ncu
from tutor.catalog import get_puzzle

PUZZLE = get_puzzle("puzzle12")


@pytest.mark.skipif(shutil.which("nvcc") is None, reason="needs nvcc (the CUDA toolkit); no GPU")
@pytest.mark.parametrize("workload", ["baseline.py", "solution/workload.py"])
def test_every_kernel_compiles_for_the_h100_and_spills_nothing(tmp_path, workload):
    kernel = ptxas_kernel(tmp_path, PUZZLE, workload)
    assert kernel.spill_store_bytes == 0 and kernel.registers <= 64


def test_the_library_transpose_is_the_keys_exactly(monkeypatch):
    spec, library = puzzle_file(PUZZLE, "spec.py"), puzzle_file(PUZZLE, "alternatives/library_transpose.py")
    monkeypatch.setattr(spec, "TOKENS", 256)  # the same draw, fewer tokens: the CPU's share
    keys = spec.make_input(1, "cpu")
    got = library.forward(library.prepare({}, "cpu"), keys)
    assert got.shape == (spec.DIM, 256) and got.is_contiguous() and torch.equal(got, keys.T)
    # The shapes tile exactly: the tiled kernels (32 and 64 a side) need no edge handling.
    assert spec.TOKENS % 64 == 0 and spec.DIM % 64 == 0


def test_its_recordings_show_a_warp_asking_for_32_sectors_a_load():
    """What its hints send the learner to find (recorded on an H200, MEASUREMENTS.md): 32 sectors a global
    load against the tile's 4, L2 catching the rest, and DRAM moving no more bytes than the fixed kernel."""
    from tutor.profilers import ncu

    baseline = ncu.extract(PUZZLE.recordings_dir / "baseline_ncu.csv").values
    reference = ncu.extract(reference_ncu("puzzle12")).values
    assert baseline["ncu.global_load_sectors_per_request"] == 32 and reference["ncu.global_load_sectors_per_request"] == 4
    assert baseline["ncu.l2_hit_rate_pct"] > 80 and baseline["ncu.dram_bytes"] < 1.1 * reference["ncu.dram_bytes"]
    assert baseline["ncu.duration_us"] > 2 * reference["ncu.duration_us"]


@pytest.mark.gpu
@pytest.mark.parametrize("workload", ["baseline.py", "solution/workload.py", "alternatives/triton_tiles.py",
                                      "alternatives/library_transpose.py"])
def test_every_style_gives_the_keys_transposed_exactly(workload):
    spec, other = puzzle_file(PUZZLE, "spec.py"), puzzle_file(PUZZLE, workload)
    keys = spec.make_input(2, "cuda")
    got = other.forward(other.prepare({}, "cuda"), keys)
    print(workload, tuple(got.shape))
    assert torch.equal(got, keys.T.contiguous())
