"""Nsight Compute backend: parsing real ncu exports from the H100, the command line, a missing ncu.

The CSVs were written by `benchmarks/ncu_verify.py puzzle1` on the H100 (ncu 2025.3.1,
torch 2.11): the tutor's own `profile puzzle1 --profiler ncu` on the fp8 baseline and on
the reference solution (Triton fp8 GEMV in a CUDA graph).
"""

from __future__ import annotations

from pathlib import Path

import pytest

from tutor import actions
from tutor.catalog import get_puzzle
from tutor.errors import EnvironmentProblem
from tutor.formatting import kernel_columns
from tutor.metrics import describe
from tutor.profilers import ncu
from conftest import recording

FIXTURES = Path(__file__).parent / "fixtures"
FP8_WEIGHT_BYTES = 4096 * 4096  # one layer


@pytest.fixture(scope="module")
def baseline():
    return ncu.extract(recording("puzzle1", "ncu.csv"))


@pytest.fixture(scope="module")
def reference():
    return ncu.extract(FIXTURES / "puzzle1_mine_ncu.csv")


def test_baseline_kernels_are_the_dequantisation_passes(baseline):
    kinds = [k["name"] for k in baseline.kernels]
    assert baseline.values["ncu.kernels_profiled"] == 40  # 8 layers x 5 kernels, one forward()
    assert kinds[0] == "at::elementwise_kernel" and any(k.startswith("nvjet") for k in kinds)
    assert all(k["count"] == 8 for k in baseline.kernels)
    # Durations come in µs (ncu's unit row is read, not assumed): tens of µs per pass.
    assert 40 < baseline.values["ncu.duration_us"] < 80


def test_reference_gemv_reads_each_fp8_weight_byte_once(reference):
    [gemv] = reference.kernels
    assert gemv["name"] == "_fp8_gemv_kernel" and gemv["count"] == 8
    v = reference.values
    assert v["ncu.dram_bytes"] == pytest.approx(FP8_WEIGHT_BYTES, rel=0.02)
    # 1024 blocks of 128 threads on 132 SMs: less than one wave, held back by registers.
    assert v["ncu.grid_size"] == 1024 and v["ncu.waves_per_sm"] < 1
    assert v["ncu.registers_per_thread"] == 50
    assert v["ncu.occupancy_limit_registers"] < v["ncu.occupancy_limit_warps"]
    assert v["ncu.achieved_occupancy_pct"] <= v["ncu.theoretical_occupancy_pct"]


def test_stall_reasons_and_every_value_are_documented(baseline, reference):
    for metrics in (baseline, reference):
        assert max(metrics.values[k] for k in metrics.values if k.startswith("ncu.stall.")) \
            == metrics.values["ncu.stall.long_scoreboard"]  # memory-bound: waiting on global loads
        assert all(describe(name) for name in metrics.values), [n for n in metrics.values if not describe(n)]


def test_profile_command_filters_to_the_profiled_range(tmp_path):
    cmd = ncu.profile_command("/opt/ncu", tmp_path / "profile")
    assert cmd[0] == "/opt/ncu"
    assert cmd[cmd.index("--nvtx-include") + 1] == "infprof.kernels/"
    assert cmd[cmd.index("--clock-control") + 1] == "none"
    assert cmd[cmd.index("--export") + 1] == str(tmp_path / "profile")
    assert {cmd[i + 1] for i, a in enumerate(cmd) if a == "--section"} >= {"SpeedOfLight", "Occupancy", "LaunchStats"}
    # Bank conflicts are in no section the command asks for: their counters are asked for by name, and
    # extract() knows each of them.
    asked = cmd[cmd.index("--metrics") + 1].split(",")
    assert "l1tex__data_bank_conflicts_pipe_lsu_mem_shared_op_ld.sum" in asked and set(asked) <= set(ncu.METRICS)


def test_missing_ncu_says_how_to_install(monkeypatch):
    monkeypatch.setenv("PATH", "/nonexistent")
    monkeypatch.setattr(ncu, "SEARCH", ())
    with pytest.raises(EnvironmentProblem) as e:
        ncu.find_ncu()
    assert "Nsight Compute" in e.value.message and "developer.nvidia.com" in e.value.advice


def test_empty_export_is_a_clear_error(tmp_path):
    csv = tmp_path / "ncu.csv"
    lines = (FIXTURES / "puzzle1_mine_ncu.csv").read_text().splitlines()
    csv.write_text("\n".join(lines[:2]) + "\n")  # header and units, no kernel
    with pytest.raises(Exception, match="profiled no kernels"):
        ncu.extract(csv)


@pytest.mark.gpu
def test_profile_under_ncu_end_to_end(workspace):
    try:
        ncu.find_ncu()
    except EnvironmentProblem:
        pytest.skip("ncu is not installed")
    outcome = actions.profile(workspace, get_puzzle("puzzle1"), "baseline", profiler="ncu")
    print({k: v for k, v in outcome.metrics.values.items() if not k.startswith("ncu.stall")})
    assert outcome.trace_path.suffix == ".ncu-rep" and outcome.trace_path.exists()
    assert outcome.metrics.values["ncu.kernels_profiled"] == 40


def test_per_block_units_are_scaled():
    # ncu gives shared memory in "Kbyte/block": 213.504 of them is GemLite's 5-stage 64x32x256 tile.
    gemm = ncu.extract(recording("puzzle3", "ncu.csv"))
    assert gemm.values["ncu.dynamic_shared_bytes"] == pytest.approx(213504)
    assert gemm.values["ncu.occupancy_limit_shared_mem"] == 1


@pytest.mark.parametrize("recorded, spills", [("baseline", 159_793_152), ("reference", 0)])
def test_spilling_instructions_are_counted_per_kernel(recorded, spills):
    """puzzle9's kernels on the H100 (benchmarks/measure_draft.py): the capped one spills on every pass of
    its loop, the one given its registers never does; the kernel table shows the count too."""
    measured = ncu.extract(FIXTURES / f"puzzle9_{recorded}_ncu.csv")
    assert measured.values["ncu.spill_instructions"] == spills
    assert measured.kernels[0]["spill_instructions"] == spills and "spill_instructions" in kernel_columns(measured.kernels)


def test_divergence_and_atomics_are_read_where_the_default_sections_give_them():
    """Issue 15's warp-divergence and atomic-contention evidence, from columns the H100 export already has:
    puzzle9's kernels branch alike in every thread of a warp and use no atomics."""
    for recorded in ("baseline", "reference"):
        values = ncu.extract(FIXTURES / f"puzzle9_{recorded}_ncu.csv").values
        assert values["ncu.threads_per_instruction"] == 32.0 and values["ncu.l2_atomic_busy_pct"] == 0.0
        assert values["ncu.l2_atomic_busiest_pct"] == 0.0


def test_contended_atomics_saturate_one_l2_slice_while_the_average_idles():
    """puzzle10's 16M atomicAdds on 64 counters on the H100: the busiest slice's atomic unit is 83% busy,
    the average slice's 1%, so the average alone would read as idle; counted in shared memory first,
    the busiest falls to 14%."""
    baseline = ncu.extract(FIXTURES / "puzzle10_baseline_ncu.csv").values
    reference = ncu.extract(FIXTURES / "puzzle10_reference_ncu.csv").values
    assert baseline["ncu.l2_atomic_busiest_pct"] == pytest.approx(82.997075)
    assert baseline["ncu.l2_atomic_busy_pct"] == pytest.approx(1.037463)
    assert reference["ncu.l2_atomic_busiest_pct"] == pytest.approx(13.622511)
    assert baseline["ncu.dram_throughput_pct"] < 1 < 50 < reference["ncu.dram_throughput_pct"]


def test_the_pipes_say_whether_matrix_products_ran_on_the_tensor_cores():
    """puzzle24's tower under Nsight Compute on an H200 (benchmarks/measure_draft.py): in fp32 cuBLAS's kernel
    keeps its SMs' FMA pipe busy 79% of their active cycles and the tensor pipe idle; with TF32 allowed the
    tensor pipe is busy 83% and the FMA pipe 3%. The SMs' throughput alone (86% and 75%) does not tell them apart."""
    fp32 = ncu.extract(recording("puzzle24", "ncu.csv"))
    tf32 = ncu.extract(FIXTURES / "puzzle24_tf32_matmul_ncu.csv")
    assert fp32.kernels[0]["name"].startswith("sm80_xmma_gemm_f32f32_f32f32") and "tf32" in tf32.kernels[0]["name"]
    assert fp32.values["ncu.fma_pipe_pct"] == pytest.approx(78.92938)
    assert fp32.values["ncu.tensor_pipe_pct"] < 0.01 < 80 < tf32.values["ncu.tensor_pipe_pct"]
    assert tf32.values["ncu.fma_pipe_pct"] < 5
    assert min(fp32.values["ncu.sm_throughput_pct"], tf32.values["ncu.sm_throughput_pct"]) > 70
    assert describe("ncu.tensor_pipe_pct") and describe("ncu.fma_pipe_pct")
