"""puzzle5, Each step dearer than the last, as far as the CPU can check it: the styles that write the cache in place
decode what torch.cat's copies decode, and its H100 recording shows the copies the story names (its folder:
tests/test_dev_check.py; the reference diagnosis on the recording: tests/test_study.py). The tiers were set on the
H100 (MEASUREMENTS.md).

The scene is sized for the GPU (a 540 MB cache, so a step's bytes outweigh its launches); the CPU runs the same code
on a smaller one, each module's size constants set to it. The graphed and compiled runs are the GPU's to grade.
"""

from __future__ import annotations

import pytest
import torch

from conftest import puzzle_file, relative_l2
from tutor.catalog import get_puzzle
from tutor.metrics import ProfileMetrics

PUZZLE = get_puzzle("puzzle5")
ON_THE_CPU = {"BATCH": 4, "HIDDEN": 256, "PROMPT": 256, "STEPS": 16}


def module(relative: str, sizes: dict | None = None):
    return puzzle_file(PUZZLE, relative, sizes)


@pytest.mark.parametrize("workload", ["alternatives/in_place.py", "alternatives/masked_compiled.py"])
def test_the_cache_written_in_place_decodes_what_the_copies_decode(workload):
    spec, baseline, other = (module(f, ON_THE_CPU) for f in ("spec.py", "baseline.py", workload))
    weights = spec.make_weights(3, "cpu")
    state = other.prepare(weights, "cpu")
    if "step" in state:  # masked_compiled's module uncompiled: compiling is the GPU's to grade
        state["step"] = state["module"]
    for seed in (8, 9):  # twice: a second call starts from the cache the first one left
        x = spec.make_input(seed, "cpu")
        expected = baseline.forward(weights, x)
        got = other.forward(state, x)
        rel = relative_l2(got, expected)
        print(f"{workload} vs baseline: relative L2 {rel:.2e}")
        assert expected.shape == (spec.BATCH, spec.STEPS, spec.HIDDEN) and expected.dtype == torch.bfloat16
        assert rel < PUZZLE.correctness.max_rel_l2 / 3  # bf16: only the attention's order of sums differs


def test_every_workload_is_sized_as_the_spec_is():
    """The sizes live in each file (a learner's workload reads no spec): one changed alone would decode another scene."""
    sizes = {name: getattr(module("spec.py"), name) for name in (*ON_THE_CPU, "HEADS")}
    for relative in ("baseline.py", "solution/workload.py", "alternatives/in_place.py",
                     "alternatives/masked_compiled.py"):
        loaded = module(relative)
        assert {n: getattr(loaded, n) for n in sizes if hasattr(loaded, n)} == \
            {n: v for n, v in sizes.items() if hasattr(loaded, n)}, relative


def test_its_recording_shows_the_copies_the_story_names():
    """The baseline on the H100: two torch.cat copies a step (and one stack) are most of a busy GPU's time."""
    assert not PUZZLE.draft
    recorded = ProfileMetrics.from_json((PUZZLE.recordings_dir / "baseline_metrics.json").read_text())
    steps = module("spec.py").STEPS
    [copies] = [k for k in recorded.kernels if k["category"] == "copy"]
    assert copies["count"] == recorded.values["iterations"] * (2 * steps + 1)
    assert recorded.values["kernels.category.copy.share"] > 0.5 > recorded.values["kernels.category.attention.share"]
    assert recorded.values["gpu.busy_fraction"] > 0.9  # the bytes, not the host, set a step's time


@pytest.mark.gpu
@pytest.mark.parametrize("workload", ["solution/workload.py", "alternatives/in_place.py",
                                      "alternatives/masked_compiled.py"])
def test_every_style_decodes_the_baselines_states_on_the_gpu(workload):
    """At full size on a GPU, graphed and compiled as a grade runs them: each style within the tolerance of the
    baseline, twice (the second call starts from the cache and graph the first left)."""
    spec, baseline, other = (module(f) for f in ("spec.py", "baseline.py", workload))
    weights = spec.make_weights(3, "cuda")
    state = other.prepare(weights, "cuda")
    for seed in (8, 9):
        x = spec.make_input(seed, "cuda")
        rel = relative_l2(other.forward(state, x), baseline.forward(weights, x))
        print(f"{workload} vs baseline on the GPU: relative L2 {rel:.2e}")
        assert rel < PUZZLE.correctness.max_rel_l2
