"""puzzle17, More bytes from DRAM than keys in the cache, as far as the CPU can check it: its kernels compile for sm_90
without spills; the reference is the baseline but for its block numbers; its keys outgrow L2; cuBLAS's
scores meet the tolerance; its recordings show L2 hits at 11% and 1.09 GB from DRAM against the reference's
77% and 150 MB. The tiers were set on an H200 (the H100's SMs and L2; MEASUREMENTS.md); the kernels are
the GPU's to run.
"""

from __future__ import annotations

import shutil

import pytest
import torch

from conftest import ptxas_kernel, puzzle_file, reference_ncu, relative_l2
from tutor.catalog import get_puzzle

PUZZLE = get_puzzle("puzzle17")
KERNELS = ["baseline.py", "solution/workload.py", "alternatives/group_in_registers.py"]
H100_L2_BYTES = 50 * 2**20


def _gqa_scores(k: torch.Tensor, q: torch.Tensor) -> torch.Tensor:
    """scores[b, h, s] = q[b, h] . k[b, h // GROUP, s] / sqrt(DIM), in float64 on the CPU."""
    batch, kv_heads, seq, dim = k.shape
    grouped = q.double().reshape(batch, kv_heads, -1, dim)  # [b, kv, group, d]: heads that share a key head
    scores = torch.einsum("bkgd,bksd->bkgs", grouped, k.double()) / dim**0.5
    return scores.reshape(batch, -1, seq)


@pytest.mark.skipif(shutil.which("nvcc") is None, reason="needs nvcc (the CUDA toolkit); no GPU")
@pytest.mark.parametrize("workload", KERNELS)
def test_every_kernel_compiles_for_the_h100_and_spills_nothing(tmp_path, workload):
    kernel = ptxas_kernel(tmp_path, PUZZLE, workload)
    assert kernel.spill_store_bytes == 0 and kernel.registers <= 96  # 96 x 256: two blocks an SM at least


def test_the_reference_is_the_baseline_but_for_its_block_numbers():
    """The lesson is the order alone: the reference's kernel differs from the baseline's only in the lines
    that decode the block number into (member, request, key head, chunk)."""
    import difflib

    def code(relative: str) -> list[str]:  # the kernel's lines without their comments
        lines = (line.split("//")[0].strip() for line in puzzle_file(PUZZLE, relative).KERNEL.splitlines())
        return [line for line in lines if line]

    baseline, reference = code("baseline.py"), code("solution/workload.py")
    changed = [line[1:] for line in difflib.unified_diff(baseline, reference, lineterm="", n=0)
               if line[:1] in "+-" and not line.startswith(("+++", "---"))]
    assert changed and all("id" in line and ("%" in line or "/=" in line or "= id" in line) for line in changed)
    assert len(changed) <= 6 and len(baseline) == len(reference)
    reference, baseline = puzzle_file(PUZZLE, "solution/workload.py"), puzzle_file(PUZZLE, "baseline.py")
    assert (reference.LAUNCHER, reference.BINDING) == (baseline.LAUNCHER, baseline.BINDING)


def test_its_keys_outgrow_l2_and_the_baselines_order_spaces_a_keys_readers_a_cache_apart():
    spec = puzzle_file(PUZZLE, "spec.py")
    keys = spec.BATCH * spec.KV_HEADS * spec.SEQ * spec.DIM * 2
    assert keys > 2.5 * H100_L2_BYTES and spec.HEADS == spec.KV_HEADS * spec.GROUP == 64
    chunk, resident = 256, 132 * 8  # the kernels' CHUNK; 8 blocks of 256 threads an SM
    blocks_a_member = spec.BATCH * spec.KV_HEADS * spec.SEQ // chunk
    # Between two reads of one chunk, a member's whole pass: more keys than L2, more blocks than run at once.
    assert (blocks_a_member - 1) * chunk * spec.DIM * 2 > 2 * H100_L2_BYTES and blocks_a_member > resident


def test_the_library_matmul_is_the_scores_within_the_tolerance(monkeypatch):
    spec, library = puzzle_file(PUZZLE, "spec.py"), puzzle_file(PUZZLE, "alternatives/library_matmul.py")
    monkeypatch.setattr(spec, "SEQ", 512)  # the same heads, fewer keys: the CPU's share
    w, q = spec.make_weights(1, "cpu"), spec.make_input(2, "cpu")
    exact = _gqa_scores(w["k"], q)
    got = library.forward(library.prepare(w, "cpu"), q)
    assert got.dtype == torch.float32 and got.shape == (spec.BATCH, spec.HEADS, 512)
    rel = relative_l2(got, exact)
    assert rel < PUZZLE.correctness.max_rel_l2 / 5, rel


@pytest.mark.gpu
@pytest.mark.parametrize("workload", [*KERNELS, "alternatives/library_matmul.py"])
def test_every_style_gives_the_scores(workload):
    spec, other = puzzle_file(PUZZLE, "spec.py"), puzzle_file(PUZZLE, workload)
    w, q = spec.make_weights(3, "cuda"), spec.make_input(4, "cuda")
    exact = _gqa_scores(w["k"], q).cpu()  # float64 on the GPU: the CPU took minutes a style over these keys
    got = other.forward(other.prepare(w, "cuda"), q).cpu().double()
    rel = relative_l2(got, exact)
    print(workload, f"relative L2 {rel:.2e}")
    assert rel < PUZZLE.correctness.max_rel_l2


def test_its_recordings_show_the_keys_read_from_dram_eight_times():
    """What the hints send the learner to find (recorded on an H200, MEASUREMENTS.md): one kernel, L2 hits near
    one in ten and 8 times the keys' 134 MB from DRAM; in the reference's order 77% hits and 150 MB."""
    import tomllib

    from tutor.metrics import ProfileMetrics
    from tutor.profilers import ncu

    assert not PUZZLE.draft  # it ships: tests/test_dev_check.py checks its whole folder
    recorded = ProfileMetrics.from_json((PUZZLE.recordings_dir / "baseline_metrics.json").read_text())
    assert recorded.kernels[0]["name"] == "scores" and recorded.kernels[0]["share"] > 0.99
    baseline = ncu.extract(PUZZLE.recordings_dir / "baseline_ncu.csv").values
    reference = ncu.extract(reference_ncu("puzzle17")).values
    assert baseline["ncu.l2_hit_rate_pct"] < 20 and reference["ncu.l2_hit_rate_pct"] > 70
    assert baseline["ncu.dram_bytes"] > 1e9 and baseline["ncu.dram_bytes"] > 6 * reference["ncu.dram_bytes"]
    cited = tomllib.loads((PUZZLE.solution_dir / "answer.toml").read_text())["kernel_evidence"]["metric"]
    assert reference[cited] > 5 * baseline[cited]
