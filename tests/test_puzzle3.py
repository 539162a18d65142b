"""puzzle3's grader without a GPU: the [autotune] report against GemLite's choice, and the reference install.

FACTS is what spec.facts reported in the H100 grades of `benchmarks/device_puzzle.sh puzzle3` for
4096x4096 A16W8 fp8 at M=128 with GemLite 0.6.0.post2: the GEMM kernel with 64x64x64 tiles (its
configs/h100.json lists BLOCK_SIZE_K 256 for that key; the kernel ran with 64).
"""

from __future__ import annotations

import tomllib

from graders.puzzle3 import autotune_report
from tutor.catalog import get_puzzle
from tutor.reference import install_reference

FACTS = {"matmul_type": "GEMM", "config_key": "(128, 4096, 4096, 4096, 1, 408)",
         "config": {"BLOCK_SIZE_M": 64, "BLOCK_SIZE_N": 64, "BLOCK_SIZE_K": 64}}


def answer(tmp_path, autotune: str):
    path = tmp_path / "answer.toml"
    path.write_text('bottleneck = "cpu_overhead"\n' + autotune)
    return path


def test_a_true_report_passes(tmp_path):
    path = answer(tmp_path, '[autotune]\nmatmul_type = "GEMM"\nblock_size_m = 64\nblock_size_n = 64\nblock_size_k = 64\n')
    criterion = autotune_report(FACTS, path)
    assert criterion.passed, criterion.details


def test_a_wrong_kernel_or_tile_fails_and_says_which(tmp_path):
    path = answer(tmp_path, '[autotune]\nmatmul_type = "GEMM_SPLITK"\nblock_size_m = 64\nblock_size_n = 128\nblock_size_k = 64\n')
    criterion = autotune_report(FACTS, path)
    assert not criterion.passed and "2 of 4" in criterion.summary
    flagged = [d for d in criterion.details if d.endswith("✗")]
    assert [d.split(":")[0] for d in flagged] == ["matmul_type", "block_size_n"]


def test_no_report_fails(tmp_path):
    assert not autotune_report(FACTS, answer(tmp_path, "")).passed


def test_no_facts_from_the_run_fails_with_a_reason(tmp_path):
    criterion = autotune_report(None, answer(tmp_path, ""))
    assert not criterion.passed and "no GemLite choice" in criterion.summary


def test_reference_install_keeps_the_autotune_report(workspace):
    puzzle = get_puzzle("puzzle3")
    install_reference(workspace, puzzle, {"gpu.busy_fraction": 0.2, "cpu.time_per_iter_us": 1234.5})
    installed = tomllib.loads(workspace.editable_path(puzzle, "answer.toml").read_text())
    assert installed["autotune"]["matmul_type"] == "GEMM"
    assert [e["value"] for e in installed["evidence"]] == [0.2, 1234.5]
    assert autotune_report(FACTS, workspace.editable_path(puzzle, "answer.toml")).passed


def test_baseline_profile_shows_a_gpu_waiting_on_the_host():
    # The baseline's own `profile puzzle3` on the H100 (benchmarks/device_puzzle.sh puzzle3).
    import json
    from pathlib import Path

    from tutor.profilers.torch_trace import extract

    fixtures = Path(__file__).parent / "fixtures"
    metrics = extract(fixtures / "h100_puzzle3_baseline_trace.json.gz")
    v = metrics.values
    assert v["kernels.per_iter"] == 4  # one GemLite kernel per layer
    assert v["gpu.busy_fraction"] < 0.3  # the GPU idles while the host dispatches
    assert v["cpu.time_per_iter_us"] > 4 * v["gpu.time_per_iter_us"]
    recorded = json.loads((fixtures / "h100_puzzle3_baseline_metrics.json").read_text())["values"]
    assert v["gpu.busy_fraction"] == recorded["gpu.busy_fraction"]  # same reading here as on the H100
