"""How busy the GPU was over a window, from NVML's utilization samples (tutor.harness.gpu_busy): the arithmetic
on samples shaped as NVML gives them, and words where no driver is. Reading real samples is the H100's to
show (challenges/puzzle18/sweeps/gpu_busy.py, device part 42)."""

from __future__ import annotations

import ctypes.util

import pytest

from tutor.harness.gpu_busy import Nvml, NvmlUnavailable, busy_ms

# A sample every 100 ms (100,000 us): each the percent of the period it closes during which a kernel ran.
SAMPLES = [(1_000_000, 0), (1_100_000, 50), (1_200_000, 10), (1_300_000, 0)]


def test_each_sample_counts_its_percent_over_the_period_it_closes():
    assert busy_ms(SAMPLES, 0, 10_000_000) == pytest.approx(50 + 10)  # 50% of 100 ms, then 10% of 100 ms


def test_a_window_counts_only_the_part_of_each_period_inside_it():
    # From 1.05 s to 1.15 s: the second half of the 50% period (1.0-1.1 s), the first half of the 10% one.
    assert busy_ms(SAMPLES, 1_050_000, 1_150_000) == pytest.approx(25 + 5)
    assert busy_ms(SAMPLES, 1_300_000, 2_000_000) == 0  # after the last sample: nothing known, nothing counted


def test_the_first_sample_only_marks_where_the_next_period_starts():
    assert busy_ms([(1_000_000, 100)], 0, 10_000_000) == 0
    assert busy_ms([], 0, 10_000_000) == 0


@pytest.mark.skipif(ctypes.util.find_library("nvidia-ml") is not None, reason="a machine with an NVIDIA driver")
def test_without_a_driver_nvml_says_so_in_words():
    with pytest.raises(NvmlUnavailable, match="no NVIDIA driver library"):
        Nvml()


@pytest.mark.gpu
def test_a_second_of_matmuls_reads_busy_and_a_quiet_second_idle():
    """On a GPU: NVML's samples over a second of back-to-back matmuls add up to most of that second, over a
    second of sleep to nearly nothing (the reader a serving floor would use, before any grade relies on it)."""
    import time

    import torch

    nvml = Nvml()
    a = torch.randn(8192, 8192, device="cuda")
    (a @ a).sum().item()
    time.sleep(1.5)  # NVML's period is 1/6 s to 1 s, by the product: a whole one of quiet first
    marks = [max(t for t, _ in nvml.samples_since(0))]
    end = time.monotonic() + 1.0
    while time.monotonic() < end:
        for _ in range(10):
            a @ a
        torch.cuda.synchronize()
    time.sleep(1.5)  # the sample that closes the work's last period has come
    marks.append(max(t for t, _ in nvml.samples_since(0)))
    time.sleep(1.5)
    marks.append(max(t for t, _ in nvml.samples_since(0)))
    samples = nvml.samples_since(0)
    busy, quiet = busy_ms(samples, marks[0], marks[1]), busy_ms(samples, marks[1], marks[2])
    periods = sorted(later[0] - earlier[0] for earlier, later in zip(samples, samples[1:]))
    print(f"busy {busy:.0f} ms over {(marks[1] - marks[0]) / 1e3:.0f} ms, quiet {quiet:.0f} ms over "
          f"{(marks[2] - marks[1]) / 1e3:.0f} ms; {len(samples)} samples, median period "
          f"{periods[len(periods) // 2] / 1e3:.1f} ms")
    assert 700 < busy < 2600 and quiet < 100
