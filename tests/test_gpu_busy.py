"""How busy the GPU was over a window, from NVML's utilization samples (tutor.harness.gpu_busy): the arithmetic
on samples shaped as NVML gives them, and words where no driver is. Reading real samples is the H100's to
show (challenges/puzzle18/sweeps/gpu_busy.py)."""

from __future__ import annotations

import ctypes.util

import pytest

from conftest import VirtualClock
from tutor.harness.gpu_busy import (SETTLE_LIMIT_S, BusyWatch, Nvml, NvmlUnavailable, busy_ms, cuda_device_uuid,
                                    inner_busy_ms)

# A sample every 100 ms (100,000 us): each the percent of the period it closes during which a kernel ran.
SAMPLES = [(1_000_000, 0), (1_100_000, 50), (1_200_000, 10), (1_300_000, 0)]


def test_each_sample_counts_its_percent_over_the_period_it_closes():
    assert busy_ms(SAMPLES, 0, 10_000_000) == pytest.approx(50 + 10)  # 50% of 100 ms, then 10% of 100 ms


def test_a_window_counts_only_the_part_of_each_period_inside_it():
    # From 1.05 s to 1.15 s: the second half of the 50% period (1.0-1.1 s), the first half of the 10% one.
    assert busy_ms(SAMPLES, 1_050_000, 1_150_000) == pytest.approx(25 + 5)
    assert busy_ms(SAMPLES, 1_300_000, 2_000_000) == 0  # after the last sample: nothing known, nothing counted


def test_the_inner_reading_counts_only_the_periods_wholly_inside_the_window():
    # From 1.05 s to 1.35 s: the periods 1.1-1.2 (10%) and 1.2-1.3 (0%) are inside; 1.0-1.1 straddles the start.
    assert inner_busy_ms(SAMPLES, 1_050_000, 1_350_000) == pytest.approx((10, 200))
    assert inner_busy_ms(SAMPLES, 1_000_000, 1_300_000) == pytest.approx((60, 300))
    assert inner_busy_ms(SAMPLES, 1_050_000, 1_150_000) == (0, 0)  # no whole period: nothing read


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

    nvml = Nvml(uuid=cuda_device_uuid())
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


class FakeNvml:
    """NVML as a watch meets it: a sample every 200 ms of a clock the test moves, of which only the last 14 s
    are held (the H100's buffer); each the percent `busy(t)` gives for the period it closes."""

    def __init__(self, clock, busy):
        self.clock, self.busy = clock, busy

    def samples_since(self, since_us: int) -> list[tuple[int, int]]:
        now_us = int(self.clock.now * 1e6)
        held = range(max(0, now_us - 14_000_000) // 200_000 * 200_000, now_us + 1, 200_000)
        return [(t, self.busy(t)) for t in held if t > since_us]


def test_a_watch_polled_through_a_long_replay_keeps_every_sample_its_window_needs():
    """A 40 s replay at 30% busy, polled a step at a time: NVML's 14 s buffer drops its start long before the
    end, yet the watch counts all 40 s of it: 12 s busy."""
    clock = VirtualClock(100.0)
    watch = BusyWatch(FakeNvml(clock, lambda t: 30 if 110_000_000 < t <= 150_000_000 else 0), clock, clock.sleep)
    clock.now = 110.0
    watch.read()
    start = watch.now_us()
    while clock.now < 150.0:
        clock.now += 0.01  # a step
        watch.poll()
    end = watch.now_us()
    clock.now += 5.0  # quiet after the replay: its samples are not the window's
    assert watch.settle(end)
    assert busy_ms(sorted(watch.samples.items()), start, end) == pytest.approx(12_000, rel=1e-3)
    assert watch.inner_busy_ms(start, end) == pytest.approx((12_000, 40_000), rel=1e-3)
    assert busy_ms(sorted(watch.samples.items()), end, watch.now_us()) == 0


def test_settling_waits_for_the_sample_that_closes_the_window_and_gives_up_in_time():
    clock = VirtualClock(100.0)
    watch = BusyWatch(FakeNvml(clock, lambda t: 100), clock, clock.sleep)
    end = watch.now_us() + 50_000  # inside a period whose sample has not come yet
    clock.now += 0.05
    assert watch.settle(end) and watch.newest >= end  # it slept to the next sample
    stuck = BusyWatch(FakeNvml(VirtualClock(100.0), lambda t: 100), clock, clock.sleep)  # NVML's clock stands still
    before = clock.now
    assert not stuck.settle(watch.now_us() + 10_000_000)
    assert clock.now - before == pytest.approx(SETTLE_LIMIT_S, abs=0.1)


def test_a_watch_whose_nvml_stops_answering_says_why_and_lets_the_grade_go_on():
    clock = VirtualClock(100.0)
    nvml = FakeNvml(clock, lambda t: 50)
    watch = BusyWatch(nvml, clock, clock.sleep)

    def refuse(since_us: int):
        raise NvmlUnavailable("NVML error 999 for utilization samples")

    nvml.samples_since = refuse
    clock.now += 5.0
    watch.poll()  # no exception: a grade is never failed by its evidence
    assert watch.failed == "NVML error 999 for utilization samples"
    assert not watch.settle(watch.now_us())
