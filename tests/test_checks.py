"""The harness's output comparison (tutor.harness.checks.compare), on CPU tensors as the pipes deliver them."""

from __future__ import annotations

import math

import pytest

torch = pytest.importorskip("torch")

from tutor.harness.checks import compare  # noqa: E402


def output(t):
    return {"tensor": t, "cuda": False}


def test_an_identical_output_has_no_error_and_a_different_one_its_relative_l2():
    ref = torch.arange(1.0, 5.0)
    assert compare(output(ref.clone()), output(ref)) == {"ok_structure": True, "rel_l2": 0.0, "max_abs": 0.0,
                                                         "on_gpu": False}
    off = compare(output(ref + torch.tensor([0.0, 0.0, 0.0, 1.0])), {"tensor": ref, "cuda": True})
    assert off["ok_structure"] and off["max_abs"] == 1.0 and not off["on_gpu"]  # where the learner's output was
    assert off["rel_l2"] == pytest.approx(1.0 / math.sqrt(1 + 4 + 9 + 16))


def test_nan_fails_even_where_the_oracle_has_nan_too():
    """NaN equals nothing, itself included: an output of NaN is never waved through as identical."""
    ref = torch.tensor([1.0, float("nan")])
    verdict = compare(output(ref.clone()), output(ref))
    assert not verdict["ok_structure"] and "NaN" in verdict["problem"]


def test_shape_and_dtype_mismatches_are_structural():
    ref = torch.zeros(4)
    assert "shape" in compare(output(torch.zeros(2, 2)), output(ref))["problem"]
    assert "dtype" in compare(output(torch.zeros(4, dtype=torch.float16)), output(ref))["problem"]
