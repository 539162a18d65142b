"""puzzle10, Ten lines, slower than their reads, as far as the CPU can check it: every kernel
compiles for sm_90 and spills nothing (ptxas, as on the H100); the routes are skewed as the story says;
the library's count is the counters' count; its H100 recordings show one kernel and one saturated L2
slice (its folder: tests/test_dev_check.py). The tiers were set on the H100 (MEASUREMENTS.md); the
kernels are the GPU's to run.
"""

from __future__ import annotations

import shutil

import pytest
import torch

from conftest import ptxas_kernel, puzzle_file
from tutor.catalog import get_puzzle
from tutor.metrics import ProfileMetrics
from tutor.profilers import ncu

PUZZLE = get_puzzle("puzzle10")
KERNELS = ["baseline.py", "solution/workload.py", "alternatives/warp_aggregated.py"]


def module(relative: str):
    return puzzle_file(PUZZLE, relative)


@pytest.mark.skipif(shutil.which("nvcc") is None, reason="needs nvcc (the CUDA toolkit); no GPU")
@pytest.mark.parametrize("workload", KERNELS)
def test_every_kernel_compiles_for_the_h100_and_spills_nothing(tmp_path, workload):
    kernel = ptxas_kernel(tmp_path, PUZZLE, workload)
    assert kernel.spill_store_bytes == 0 and kernel.registers <= 64


def test_routes_are_skewed_towards_the_first_experts(monkeypatch):
    spec = module("spec.py")
    monkeypatch.setattr(spec, "ROUTES", 1 << 18)  # the same draw, fewer routes: the CPU's share
    routes = spec.make_input(3, "cpu")
    counts = torch.bincount(routes.long(), minlength=spec.EXPERTS)
    assert routes.dtype == torch.int32 and int(routes.min()) >= 0 and int(routes.max()) == spec.EXPERTS - 1
    assert abs(counts[0].item() / routes.numel() - 1 / 8) < 0.01  # an eighth to expert 0: its counter's queue
    assert counts[-1].item() / routes.numel() < 0.01 and len(counts) == spec.EXPERTS


def test_the_library_count_is_the_counters_count(monkeypatch):
    spec, library = module("spec.py"), module("alternatives/library_bincount.py")
    monkeypatch.setattr(spec, "ROUTES", 1 << 16)
    routes = spec.make_input(4, "cpu")
    by_hand = torch.zeros(spec.EXPERTS, dtype=torch.int32).index_add_(0, routes.long(), torch.ones_like(routes))
    got = library.forward(library.prepare({}, "cpu"), routes)
    assert got.dtype == torch.int32 and torch.equal(got, by_hand) and int(got.sum()) == routes.numel()


def test_its_recordings_show_one_kernel_and_one_saturated_l2_slice():
    """What the story and hints ask the learner to find: the torch profile blames one kernel and nothing
    else; Nsight Compute shows DRAM and the SMs idle while the busiest L2 slice's atomic unit is not."""
    assert not PUZZLE.draft  # it ships: tests/test_dev_check.py checks its whole folder
    recorded = ProfileMetrics.from_json((PUZZLE.recordings_dir / "baseline_metrics.json").read_text())
    assert recorded.kernels[0]["name"] == "count_routes" and recorded.kernels[0]["share"] > 0.99
    seen = ncu.extract(PUZZLE.recordings_dir / "baseline_ncu.csv").values
    assert seen["ncu.l2_atomic_busiest_pct"] > 50 > 2 > seen["ncu.l2_atomic_busy_pct"]
    assert seen["ncu.dram_throughput_pct"] < 1 and seen["ncu.sm_throughput_pct"] < 1


def test_the_references_kernel_evidence_is_what_the_recordings_tell_apart():
    """The reference's answer.toml cites the busiest slice, which its own H100 profile and the baseline's
    separate six-fold (83% against 14%)."""
    import tomllib

    cited = tomllib.loads((PUZZLE.solution_dir / "answer.toml").read_text())["kernel_evidence"]["metric"]
    baseline = ncu.extract(PUZZLE.recordings_dir / "baseline_ncu.csv").values[cited]
    reference = ncu.extract(PUZZLE.folder.parents[1] / "tests" / "fixtures" / "puzzle10_reference_ncu.csv").values[cited]
    assert baseline > 5 * reference


@pytest.mark.gpu
@pytest.mark.parametrize("workload", [*KERNELS[1:], "alternatives/library_bincount.py"])
def test_every_style_counts_what_the_baseline_counts(workload):
    spec, baseline, other = module("spec.py"), module("baseline.py"), module(workload)
    routes = spec.make_input(5, "cuda")
    expected = baseline.forward(baseline.prepare({}, "cuda"), routes)
    got = other.forward(other.prepare({}, "cuda"), routes)
    print(workload, got[:8].tolist())
    assert torch.equal(got, expected) and int(expected.sum()) == spec.ROUTES
