"""Issue 13, part 6: the GPU's state around every timed run (tutor.harness.gpu_environment).

The nvidia-smi output is real, recorded on the H100 (2026-11-25, driver 580.159.04) with the queries
the module makes: tests/fixtures/nvidia_smi_gpu.csv (the GPU) and nvidia_smi_apps.csv (its
compute processes, one python3 holding a CUDA context, pid 440). A stand-in nvidia-smi on PATH prints them.
"""

from __future__ import annotations

import os
import stat
from pathlib import Path

import pytest

from tutor.grading.performance import environment_lines
from tutor.harness import gpu_environment

FIXTURES = Path(__file__).parent / "fixtures"


@pytest.fixture
def recorded_smi(tmp_path, monkeypatch):
    """An nvidia-smi that answers the module's two queries with the H100's recorded output."""
    fake = tmp_path / "bin" / "nvidia-smi"
    fake.parent.mkdir()
    gpu, apps = FIXTURES / "nvidia_smi_gpu.csv", FIXTURES / "nvidia_smi_apps.csv"
    fake.write_text(f'#!/bin/sh\ncase "$*" in *query-compute-apps*) cat {apps};; *) cat {gpu};; esac\n')
    fake.chmod(fake.stat().st_mode | stat.S_IEXEC)
    monkeypatch.setenv("PATH", f"{fake.parent}{os.pathsep}{os.environ['PATH']}")


def test_a_snapshot_reads_the_gpu_and_its_processes(recorded_smi):
    state = gpu_environment.snapshot()
    assert state["name"] == "NVIDIA H100 80GB HBM3" and state["uuid"].startswith("GPU-44941a67")
    assert state["clocks.max.sm"] == "1980" and state["power.limit"] == "700.00"
    assert state["compute_processes"] == [{"pid": "440", "process_name": "python3", "used_gpu_memory": "612"}]
    assert gpu_environment.slowdowns(state) == []  # 0x1: idle between calls, not a slowdown
    assert gpu_environment.summary(state) == (
        "GPU: NVIDIA H100 80GB HBM3 (GPU-44941a67-f9ce-db2d-b091-374908957397), driver 580.159.04, "
        "SM 345 of 1980 MHz, memory 2619 MHz, 40 C, power limit 700.00 W")


def test_our_own_processes_are_no_concern_and_others_are(recorded_smi):
    state = gpu_environment.snapshot()
    assert gpu_environment.concerns(state, state, our_pids={440, 441}) == []
    shared = {**state, "compute_processes": [*state["compute_processes"],
                                             {"pid": "999", "process_name": "trainer", "used_gpu_memory": "9000"}]}
    [line] = gpu_environment.concerns(state, shared, our_pids={440, 441})
    assert line.startswith("other processes had the GPU open while you were graded: trainer (pid 999)")


def test_in_a_container_only_the_count_tells(recorded_smi):
    # nvidia-smi may list the host's pids, none of them ours: more processes than the grade's two is the sign.
    state = gpu_environment.snapshot()
    assert gpu_environment.concerns(state, state, our_pids={7, 8}) == []
    crowded = {**state, "compute_processes": [{"pid": str(p), "process_name": "python3"} for p in (1, 2, 3)]}
    [line] = gpu_environment.concerns(state, crowded, our_pids={7, 8})
    assert line.startswith("more processes had the GPU open than this grade started")


def test_clocks_held_down_are_named():
    capped = {"clocks_event_reasons.active": "0x0000000000000044"}  # software power cap + hardware thermal
    assert gpu_environment.slowdowns(capped) == ["software power cap", "hardware thermal slowdown"]
    [line] = gpu_environment.concerns(capped, {}, our_pids=set())
    assert line.startswith("the GPU's clocks were held down before the timed rounds (software power cap")


def test_the_verdict_lists_concerns_first_then_the_gpu():
    lines = environment_lines({"summary": "GPU: H100", "concerns": ["other processes had the GPU open"]})
    assert lines == ["Caution: other processes had the GPU open", "GPU: H100"]
    assert environment_lines({}) == []


def test_no_nvidia_smi_no_snapshot(monkeypatch, tmp_path):
    monkeypatch.setenv("PATH", str(tmp_path))
    assert gpu_environment.snapshot() == {}
