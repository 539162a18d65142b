"""The physical floor (tutor.grading.floor): a timing under the least work a GPU can do is refused,
and no honest solution on record comes near it."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tutor.catalog import all_puzzles, get_puzzle
from tutor.dev_check import least_work as spec_least_work
from tutor.grading.floor import SLACK, check_floor, describe, floor_ms
from tutor.harness.lockstep import merge
from conftest import recording

FIXTURES = Path(__file__).parent / "fixtures"
H100_L2 = 50 * 2**20
# The strictest floor an H100 could ever have: its datasheet's rates (SXM: 3.35 TB/s, 989 dense bf16
# TFLOP/s; its host link PCIe 5.0 x16, 64 GB/s a direction), above anything a probe measures.
H100_DATASHEET = {"hbm_read_gbps": 3350.0, "bf16_tflops": 989.0, "h2d_gbps": 64.0, "gpu": "NVIDIA H100 80GB HBM3",
                  "runs": 1}
GPU_PUZZLES = [p.id for p in all_puzzles(drafts=True).values() if p.floor_checked]
GRADED_2026_11_25 = ("puzzle1", "puzzle2", "puzzle3")  # the puzzles tests/fixtures/grades_2026-11-25.json holds


def least_work(puzzle_id: str, l2_bytes: int = H100_L2) -> dict:
    return spec_least_work(get_puzzle(puzzle_id, drafts=True), l2_bytes)


def h100_floor(puzzle_id: str) -> dict:
    return {**least_work(puzzle_id), **H100_DATASHEET}


@pytest.mark.parametrize("puzzle_id", GPU_PUZZLES)
def test_every_gpu_puzzle_states_its_floor_and_a_timing_under_it_is_refused(puzzle_id):
    floor = h100_floor(puzzle_id)
    assert floor["what"] and floor_ms(floor) > 0
    under, over = floor_ms(floor) / SLACK * 0.9, floor_ms(floor) * 10
    for clock in ("call", "gpu"):
        samples = {"mine": [under] * 5, "baseline": [over] * 5}
        refused, lines = check_floor(floor, samples if clock == "call" else {"mine": [over] * 5},
                                     samples if clock == "gpu" else {"mine": [over] * 5})
        assert [c.name for c in refused] == ["physical floor"] and not refused[0].passed and not lines
        assert f"your {'GPU time a call' if clock == 'gpu' else 'time a call'}: " in refused[0].details[0]


@pytest.mark.parametrize("puzzle_id", GRADED_2026_11_25)
def test_the_fastest_honest_h100_solution_on_record_clears_the_strictest_floor(puzzle_id):
    """From recorded H100 data: the baseline's GPU time per forward() (its recording) over the best GPU
    speed-up any honest solution reached in 107 grades (tests/fixtures/grades_2026-11-25.json)."""
    grades = json.loads((FIXTURES / "grades_2026-11-25.json").read_text())
    best = max(g["speedups"]["gpu"]["baseline"]["median"] for g in grades
               if g["puzzle"] == puzzle_id and "baseline" in g["speedups"].get("gpu", {}))
    baseline_us = json.loads(recording(puzzle_id, "metrics.json").read_text())["values"]["gpu.time_per_iter_us"]
    fastest_ms = baseline_us / 1e3 / best
    floor = h100_floor(puzzle_id)
    refused, lines = check_floor(floor, {"mine": [fastest_ms]}, {"mine": [fastest_ms]})
    assert not refused
    assert lines and "% of the floor's speed" in lines[0]
    print(puzzle_id, f"fastest honest {fastest_ms * 1e3:.1f} us, floor {floor_ms(floor) * 1e3:.2f} us")


def test_a_floor_grows_with_less_l2_and_never_counts_bytes_l2_can_hold():
    big, small = least_work("puzzle2", 50 * 2**20), least_work("puzzle2", 4 * 2**20)  # an H100, a small card
    assert small["hbm_bytes"] > big["hbm_bytes"] > 0
    assert least_work("puzzle3", 2**40)["hbm_bytes"] == 0  # all of it fits: only the FLOPs bound it


def test_a_fast_honest_timing_says_how_close_it_came():
    floor = h100_floor("puzzle1")
    refused, lines = check_floor(floor, {"mine": [0.2]}, {"mine": [floor_ms(floor) * 4]})
    assert not refused and "you run at 25% of the floor's speed" in lines[0]
    assert check_floor(None, {"mine": [1e-9]}, {}) == ([], [])  # a CPU puzzle has none
    refused, lines = check_floor({"unavailable": "OutOfMemoryError: CUDA out of memory"}, {"mine": [1e-9]}, {})
    assert not refused and "not measured this grade (OutOfMemoryError" in lines[0]  # a failed probe fails nothing


def test_the_rulers_floor_reaches_the_graders():
    side = {"samples_ms": {}, "gpu_samples_ms": {}, "host_timed": [], "clocks": {}, "timing_note": "",
            "resident_bytes": {}, "growth_bytes": 0}
    floor = h100_floor("puzzle1")
    assert merge([], [], {**side, "floor": floor}, side, [])["floor"] == floor
    assert "floor" not in merge([], [], side, {**side, "floor": {"hbm_bytes": 0}}, [])  # never the learner's


def test_each_gpu_keeps_the_best_rates_it_has_shown(tmp_path):
    from tutor.harness.peaks import best_known

    first = best_known(tmp_path, "NVIDIA H100 80GB HBM3", {"hbm_read_gbps": 3000.0, "bf16_tflops": 700.0})
    busy = best_known(tmp_path, "NVIDIA H100 80GB HBM3", {"hbm_read_gbps": 1500.0, "bf16_tflops": 720.0})
    assert first["runs"] == 1 and busy == {"hbm_read_gbps": 3000.0, "bf16_tflops": 720.0, "runs": 2}
    other = best_known(tmp_path, "NVIDIA GeForce RTX 4090", {"hbm_read_gbps": 900.0, "bf16_tflops": 150.0})
    assert other["runs"] == 1 and len(list(tmp_path.iterdir())) == 2
    # The host link is measured only for a puzzle that copies across it; a later grade keeps it.
    linked = best_known(tmp_path, "NVIDIA H100 80GB HBM3", {"hbm_read_gbps": 2900.0, "bf16_tflops": 700.0,
                                                            "h2d_gbps": 52.0})
    later = best_known(tmp_path, "NVIDIA H100 80GB HBM3", {"hbm_read_gbps": 2900.0, "bf16_tflops": 700.0})
    assert linked["h2d_gbps"] == later["h2d_gbps"] == 52.0 and later["runs"] == 4


def test_a_floor_of_bytes_across_the_host_link_is_timed_at_the_links_rate():
    work = {"h2d_bytes": 256e6, "what": "8 request batches of 32 MB from the host"}
    floor = {**work, **H100_DATASHEET, "h2d_gbps": 55.0}
    assert floor_ms(floor) == pytest.approx(256e6 / 55e9 * 1e3)  # 4.65 ms: the link, not HBM, bounds it
    refused, _ = check_floor(floor, {"mine": [floor_ms(floor) / SLACK * 0.9]}, {})
    assert [c.name for c in refused] == ["physical floor"] and "55 GB/s from pinned host memory" in refused[0].details[1]
    assert floor_ms({**floor, "h2d_gbps": None}) == floor_ms({**H100_DATASHEET, "what": "nothing", "h2d_gbps": None})


def test_a_floor_across_the_link_both_ways_is_the_slower_way_not_the_sum():
    """A duplex link carries both ways at once; results copied back are timed at the link's rate into pinned memory."""
    back = {"d2h_bytes": 134e6, "what": "embeddings copied to the host", **H100_DATASHEET, "d2h_gbps": 50.0}
    assert floor_ms(back) == pytest.approx(134e6 / 50e9 * 1e3)
    assert "50 GB/s into pinned host memory" in describe(back) and "from pinned" not in describe(back)
    both = {**back, "h2d_bytes": 256e6, "h2d_gbps": 55.0}
    assert floor_ms(both) == pytest.approx(256e6 / 55e9 * 1e3)
    assert floor_ms({**back, "flops": 275e9, "flop_dtype": "fp32"}) > floor_ms(back)  # fp32 matmuls outlast the copy


@pytest.mark.gpu
def test_the_probe_measures_this_gpu():
    from tutor.harness import peaks

    measured = peaks.measure(host_link=True)
    print(measured)
    assert 100 < measured["hbm_read_gbps"] < 10_000 and 10 < measured["bf16_tflops"] < 3_000
    assert 1 < measured["h2d_gbps"] < 1_000 and 1 < measured["d2h_gbps"] < 1_000  # PCIe 3 x16 to NVLink-C2C


def test_dev_check_fails_a_gpu_puzzle_without_a_floor(tmp_path):
    import shutil

    from tutor.catalog import load_puzzle
    from tutor.dev_check import static_checks

    folder = tmp_path / "p"
    shutil.copytree(get_puzzle("puzzle1").folder, folder)
    spec = folder / "spec.py"
    spec.write_text(spec.read_text().replace("def least_work(", "def _unused("))
    floor = [c for c in static_checks(load_puzzle(folder)) if c.name == "floor"]
    assert floor and floor[0].status == "failed" and "no least_work" in floor[0].detail
