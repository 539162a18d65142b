import pytest

from tutor.stats import median_interval, speedup


def test_median_interval_brackets_the_median_and_narrows_with_more_samples():
    few = median_interval([float(x) for x in range(1, 12)])
    many = median_interval([float(x % 11 + 1) for x in range(1, 400)])
    assert few.low <= few.median <= few.high
    assert few.median == 6
    assert (many.high - many.low) < (few.high - few.low)


def test_interval_has_95_percent_coverage_for_n_30():
    # For n=30 the textbook distribution-free 95% CI of the median is (x_10, x_21).
    est = median_interval([float(i) for i in range(1, 31)])
    assert (est.low, est.high) == (10.0, 21.0)


def test_speedup_is_per_round_ratio():
    est = speedup([10.0, 20.0, 30.0, 40.0, 50.0], [5.0, 10.0, 15.0, 20.0, 25.0])
    assert est.median == pytest.approx(2.0)
    assert est.low == pytest.approx(2.0)


def test_tiny_samples_fall_back_to_the_range():
    est = median_interval([3.0, 1.0, 2.0])
    assert (est.low, est.median, est.high) == (1.0, 2.0, 3.0)


def test_empty_samples_raise():
    with pytest.raises(ValueError):
        median_interval([])
