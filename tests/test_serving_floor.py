"""A serving grade's floor and evidence (tutor.grading.serving.check_serving_floor): how busy NVML saw the GPU
during each side's replays, against the model's least FLOPs for their traces at the GPU's best rate.

The figures are the H100's. Real grades of puzzle18 (tests/fixtures/puzzle18_grades_gpu_busy_2026-11-26.json,
MEASUREMENTS.md): two alternatives, the baseline against itself, and its two cheats (cheats/), servers that
read the chain off the weights once and then hand out a token a request a step, the model never run:
`gpu_table` looks the next states up with a kernel a step, `host_table` in a Python list. Both give every
right token. And the sweep that came first (tests/fixtures/puzzle18_gpu_busy_2026-11-26.json,
challenges/puzzle18/sweeps/gpu_busy.py): the same servers replayed in one process.
"""

from __future__ import annotations

import ctypes.util
import json
import re
from pathlib import Path

import pytest

from tutor.grading.serving import check_serving_floor
from tutor.harness.serving_rounds import busy_figures, busy_watch

FIXTURES = Path(__file__).parent / "fixtures"
ROWS = json.loads((FIXTURES / "puzzle18_gpu_busy_2026-11-26.json").read_text())
GRADES = json.loads((FIXTURES / "puzzle18_grades_gpu_busy_2026-11-26.json").read_text())


def test_each_recorded_grade_reads_its_floor_again_the_cheats_refused_every_server_of_the_model_passed():
    read = {}
    for grade in GRADES:
        refused, lines = check_serving_floor(grade)
        assert bool(refused) == (grade["criteria"].get("physical floor") is False), grade["which"]
        read.setdefault(grade["which"], set()).add("refused" if refused else "passed")
        mine = [r["busy_ms"] / r["covered_ms"] for r in grade["gpu_busy"]["mine"]]
        if grade["which"].startswith("cheats/"):  # NVML's whole percents: their gathers read 0 or 1% a period
            assert max(mine) < 0.01 and "did not come from running the model" in refused[0].summary
        else:  # the model ran: a sixth of each replay's time or more, against a floor of 0.1%
            assert min(mine) > 0.15 and lines[-1].startswith("physical floor:")
    assert read == {"cheats/host_table": {"refused"}, "cheats/gpu_table": {"refused"}, "baseline": {"passed"},
                    "alternatives/larger_static_batches": {"passed"}, "alternatives/continuous_full_slots": {"passed"}}
H100_BF16_TFLOPS = 803.0  # what the floor's probe read on the H100 (tutor.grading.floor's SLACK note)


def replays(server: str) -> list[dict]:
    """The sweep's replays as a grade reads them (it read the whole window, quiet before and after too)."""
    return [{"busy_ms": r["busy_ms"], "covered_ms": r["seconds"] * 1e3, "seconds": r["seconds"]}
            for r in ROWS if r["server"] == server]


def grade_figures(server: str) -> dict:
    """A grade's gpu_busy for `server` against the reference as the puzzle's server, on the recorded traces."""
    least = [r["least_ms_at_peak"] * 989.0 / H100_BF16_TFLOPS for r in ROWS if r["server"] == "reference"]
    return {"oracle": replays("reference"), "mine": replays(server), "least_ms": least,
            "rates": {"bf16_tflops": H100_BF16_TFLOPS, "gpu": "NVIDIA H100 80GB HBM3"}}


def test_the_recording_holds_what_the_floor_is_set_from():
    assert {r["server"] for r in ROWS} == {"reference", "gpu_table", "host_table"}
    assert all(r["tokens_right"] for r in ROWS)  # every server gave every right token
    assert all(0.5 < r["least_ms_at_peak"] < 2 for r in ROWS)


def test_a_server_that_never_runs_the_model_on_the_gpu_is_refused_with_the_figures():
    refused, lines = check_serving_floor({"gpu_busy": grade_figures("host_table")})
    assert [c.name for c in refused] == ["physical floor"] and not refused[0].passed
    assert "did not come from running the model" in refused[0].summary
    assert "the GPU busy 0% of their time" in refused[0].details[0]
    assert "yours 0.0%" in lines[0] and "baseline's server 38.3%" in lines[0]


@pytest.mark.parametrize("server, busy_share", [("reference", "38.3%"), ("gpu_table", "8.7%")])
def test_a_server_that_keeps_the_gpu_working_passes_and_reads_how_busy(server, busy_share):
    """The sweep's servers, each stepped in the process that replays it: there the GPU table's gathers kept the
    GPU 9% busy, and nothing refuses it. In a grade, where each step is a message through a pipe, they read
    0% (the test above)."""
    refused, lines = check_serving_floor({"gpu_busy": grade_figures(server)})
    assert refused == []
    assert f"yours {busy_share}" in lines[0]
    assert lines[-1].startswith("physical floor: the model's least work for each replay's trace (1.12 ms at")
    assert re.search(r"\), 0\.0[78]\d?% of a replay's time; yours", lines[-1])  # about 1.1 of 1300 ms


def test_without_nvml_or_a_gpu_nothing_is_refused_and_the_verdict_says_why():
    assert check_serving_floor({}) == ([], [])
    refused, lines = check_serving_floor({"gpu_busy": {"unavailable": "no NVIDIA driver library"}})
    assert refused == [] and lines == ["GPU busy time: not read this grade (no NVIDIA driver library)"]
    assert busy_watch({"device": "cpu"}, None) == "no GPU"
    if ctypes.util.find_library("nvidia-ml") is None:  # the GPU the ruler named, and no driver to read it from
        assert "no NVIDIA driver library" in busy_watch({"device": "cuda"}, "0b5a-the-rulers-gpu")


def test_a_spec_without_least_flops_gets_the_evidence_and_no_floor():
    figures = grade_figures("host_table")
    del figures["least_ms"], figures["rates"]
    refused, lines = check_serving_floor({"gpu_busy": figures})
    assert refused == [] and len(lines) == 1


class SettledWatch:
    """A watch whose samples are all in: 50% busy over every period, 0.8 s of each replay's periods inside it."""

    def settle(self, until_us: int) -> bool:
        return True

    def inner_busy_ms(self, since_us: int, until_us: int) -> tuple[float, float]:
        return 400.0, 800.0


def test_busy_figures_read_each_window_and_the_least_time_at_the_measured_rate(monkeypatch):
    monkeypatch.setattr("tutor.harness.serving_rounds.BusyWatch", SettledWatch)
    windows = {"oracle": [(0, 2_000_000)], "mine": [(3_000_000, 4_000_000)]}
    figures = busy_figures(SettledWatch(), windows, [1.6e12], {"bf16_tflops": 800.0, "gpu": "H100"})
    assert figures == {"oracle": [{"busy_ms": 400.0, "covered_ms": 800.0, "seconds": 2.0}],
                       "mine": [{"busy_ms": 400.0, "covered_ms": 800.0, "seconds": 1.0}],
                       "least_ms": [2.0], "rates": {"bf16_tflops": 800.0, "gpu": "H100"}}
    assert "least_ms" not in busy_figures(SettledWatch(), windows, [None], {"bf16_tflops": 800.0})
    assert busy_figures("no GPU", {"unavailable": "no GPU"}, [], None) == {"unavailable": "no GPU"}
