"""puzzle3's grader without a GPU: the [autotune] report against GemLite's choice, and the reference install.

FACTS is what spec.facts reported in the H100 grades of `benchmarks/device_puzzle.sh puzzle3` for
4096x4096 A16W8 fp8 at M=128 with GemLite 0.6.0.post2: the GEMM kernel with 64x64x64 tiles (its
configs/h100.json has no key with type id 108, so triton autotuned). The ncu CSVs are the tutor's own
`profile puzzle3 --profiler ncu` on the H100 (`benchmarks/ncu_verify.py puzzle3`): the baseline, whose
autotune that time kept 64x32x256 tiles (256 blocks, 213 KB shared each: 1.94 waves), and the reference
(split-K by 4, 64x128x64: 256 blocks, 2 per SM, 0.97 waves).
"""

from __future__ import annotations

import tomllib

from pathlib import Path

from graders.puzzle3 import answer_from_facts, autotune_report
from tutor import reference
from tutor.actions import ProfileOutcome
from tutor.catalog import get_puzzle
from tutor.grading import kernel_evidence as evidence
from tutor.grading.puzzle_checks import LearnerProfiles
from tutor.profilers import ncu
from tutor.reference import install_reference
from conftest import ncu_learner_profiles, recording

FIXTURES = Path(__file__).parent / "fixtures"
P3 = get_puzzle("puzzle3")


def ncu_csv(which: str) -> Path:
    """Nsight Compute's CSV of puzzle3 on the H100: the baseline's ships with the puzzle, the solution's is a fixture."""
    return recording("puzzle3", "ncu.csv") if which == "baseline" else FIXTURES / "puzzle3_mine_ncu.csv"

FACTS = {"matmul_type": "GEMM", "config_key": "(128, 4096, 4096, 4096, 1, 108)", "source": "autotune",
         "config": {"BLOCK_SIZE_M": 64, "BLOCK_SIZE_N": 64, "BLOCK_SIZE_K": 64}}


def reported(autotune: str) -> dict:
    return tomllib.loads(autotune).get("autotune", {})


def test_a_true_report_passes():
    said = reported('[autotune]\nmatmul_type = "GEMM"\nsource = "autotune"\nblock_size_m = 64\nblock_size_n = 64\nblock_size_k = 64\n')
    criterion = autotune_report(FACTS, said)
    assert criterion.passed, criterion.details


def test_a_wrong_kernel_or_tile_fails_and_says_which():
    said = reported('[autotune]\nmatmul_type = "GEMM_SPLITK"\nblock_size_m = 64\nblock_size_n = 128\nblock_size_k = 64\n')
    criterion = autotune_report(FACTS, said)
    assert not criterion.passed and "3 of 5" in criterion.summary
    flagged = [d for d in criterion.details if d.endswith("✗")]
    assert [d.split(":")[0] for d in flagged] == ["matmul_type", "source", "block_size_n"]


def test_no_report_fails():
    assert not autotune_report(FACTS, reported("")).passed


def test_no_facts_from_the_run_fails_with_a_reason():
    criterion = autotune_report(None, reported(""))
    assert not criterion.passed and "no GemLite choice" in criterion.summary


def ncu_profiles(code_hash: str = "graded") -> LearnerProfiles:
    return ncu_learner_profiles(ncu_csv("baseline"), ncu_csv("mine"), code_hash)


def test_kernel_evidence_that_tells_the_kernels_apart_passes():
    criterion = evidence.criterion(P3, {"metric": "ncu.waves_per_sm", "baseline": 1.94, "mine": 0.97}, ncu_profiles())
    assert criterion.passed, criterion.details
    assert "gemm_INT_kernel" in criterion.details[0] and "gemm_splitK_INT_kernel" in criterion.details[1]


def test_kernel_evidence_must_match_each_profile():
    swapped = {"metric": "ncu.waves_per_sm", "baseline": 0.97, "mine": 1.94}
    criterion = evidence.criterion(P3, swapped, ncu_profiles())
    assert not criterion.passed
    assert [d.endswith("✗") for d in criterion.details[:2]] == [True, True]


def test_a_metric_both_kernels_share_does_not_explain_the_choice():
    # Both launch 256 blocks: the grid alone is not why split-K wins.
    criterion = evidence.criterion(P3, {"metric": "ncu.grid_size", "baseline": 256, "mine": 256}, ncu_profiles())
    assert not criterion.passed and "same for both" in criterion.summary


def test_duration_says_that_not_why():
    criterion = evidence.criterion(P3, {"metric": "ncu.duration_us", "baseline": 33.8, "mine": 20.4}, ncu_profiles())
    assert not criterion.passed and "explains" in criterion.summary


def test_a_profile_of_older_code_does_not_count():
    criterion = evidence.criterion(P3, {"metric": "ncu.waves_per_sm", "baseline": 1.94, "mine": 0.97},
                                ncu_profiles(code_hash="an earlier workload.py"))
    assert not criterion.passed and any("older workload.py" in d for d in criterion.details)


def test_no_ncu_profiles_fails_and_says_how():
    criterion = evidence.criterion(P3, {"metric": "ncu.waves_per_sm", "baseline": 1.94, "mine": 0.97}, LearnerProfiles())
    assert not criterion.passed and any("--profiler ncu" in d for d in criterion.details)


def test_reference_install_reports_the_run_and_cites_both_ncu_profiles(workspace, monkeypatch):
    puzzle = get_puzzle("puzzle3")
    # The ncu profiles install_reference takes, answered from the H100 exports instead of a GPU.
    profiled = []

    def profile(ws, puzzle, which, profiler):
        profiled.append((which, profiler))
        return ProfileOutcome(ncu.extract(ncu_csv(which)), FIXTURES, FIXTURES)

    monkeypatch.setattr(reference.actions, "profile", profile)
    install_reference(workspace, puzzle, {"gpu.busy_fraction": 0.2, "cpu.time_per_iter_us": 1234.5},
                      answer_from_facts(FACTS))
    installed = tomllib.loads(workspace.editable_path(puzzle, "answer.toml").read_text())
    assert profiled == [("baseline", "ncu"), ("mine", "ncu")]
    assert [e["value"] for e in installed["evidence"]] == [0.2, 1234.5]
    assert autotune_report(FACTS, installed["autotune"]).passed
    assert installed["kernel_evidence"] == {"metric": "ncu.waves_per_sm", "baseline": 1.94, "mine": 0.97}
    assert evidence.criterion(P3, installed["kernel_evidence"], ncu_profiles()).passed


def test_baseline_profile_shows_a_gpu_waiting_on_the_host():
    # The baseline's own `profile puzzle3` on the H100 (benchmarks/device_puzzle.sh puzzle3).
    import json

    from tutor.profilers.torch_trace import extract

    fixtures = FIXTURES
    metrics = extract(recording("puzzle3", "trace.json.gz"))
    v = metrics.values
    assert v["kernels.per_iter"] == 4  # one GemLite kernel per layer
    assert v["gpu.busy_fraction"] < 0.3  # the GPU idles while the host dispatches
    assert v["cpu.time_per_iter_us"] > 4 * v["gpu.time_per_iter_us"]
    recorded = json.loads((recording("puzzle3", "metrics.json")).read_text())["values"]
    assert v["gpu.busy_fraction"] == recorded["gpu.busy_fraction"]  # same reading here as on the H100


def test_no_kernel_evidence_caps_the_tier_at_bronze():
    # A CUDA graph around GemLite's own kernels is the bronze fix; silver and gold need a better, explained choice.
    from tutor.actions import capped

    criterion = evidence.criterion(P3, {}, LearnerProfiles())
    assert criterion.passed and criterion.caps_tier == "bronze"
    puzzle = get_puzzle("puzzle3")
    assert [capped(puzzle, tier, [criterion]) for tier in ("", "bronze", "silver", "gold")] == ["", "bronze", "bronze", "bronze"]
