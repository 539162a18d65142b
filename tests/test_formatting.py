"""A metric's value in the unit its name says (tutor.formatting.metric_value), as the tables show it."""

from __future__ import annotations

import pytest

from tutor.formatting import metric_value


@pytest.mark.parametrize("name, value, shown", [
    ("gpu.busy_fraction", 0.978377, "97.8%"),
    ("comm.overlap_share", 0.0, "0.0%"),
    ("comm.link_peak_share", 0.000226647, "0.023%"),  # puzzle13's baseline: a sliver of the link, not 0.0%
    ("comm.link_peak_gbps", 231.397, "231 GB/s"),
    ("comm.bytes_per_iter", 2097152.0, "2.1 MB"),
    ("cpu.time_per_iter_us", 26061.3, "26.1 ms"),
    ("comm.kernels_per_iter", 256.0, "256"),
    ("ncu.dram_throughput_pct", float("nan"), "—"),
])
def test_a_metric_reads_in_the_unit_its_name_says(name, value, shown):
    assert metric_value(name, value) == shown
