"""puzzle7, The results that wait at the border, as far as the CPU can check it: the hidden states start on the
device, the baseline's embeddings end on the host, and the tolerance tells fp32 in any order from a 16-bit trip
(its folder: tests/test_dev_check.py; the output rule on hand-made results: tests/test_grading_rules.py and
tests/test_runner.py).

Every fix returns pinned memory, which a CPU-only torch cannot allocate: the styles and the harness's output
rule against workloads that break it are the GPU's to test (the `gpu` tests here).
"""

from __future__ import annotations

import shutil

import pytest
import torch

from conftest import puzzle_file, relative_l2
from tutor.catalog import get_puzzle
from tutor.metrics import ProfileMetrics

PUZZLE = get_puzzle("puzzle7")
ON_THE_CPU = {"ROWS": 64}
STYLES = ["solution/workload.py", "pinned_one_stream.py", "alternatives/compiled_overlap.py",
          "alternatives/graphed_head.py", "alternatives/compiled_graphs.py", "alternatives/two_halves.py",
          "alternatives/copy_at_end.py"]


def module(relative: str, sizes: dict | None = None):
    return puzzle_file(PUZZLE, relative, sizes)


def test_the_hidden_states_start_where_the_encoder_left_them_and_the_embeddings_end_on_the_host():
    spec, baseline = module("spec.py", ON_THE_CPU), module("baseline.py")
    first, again, other = (spec.make_input(seed, "cpu") for seed in (1, 1, 2))
    assert first.shape == (spec.BATCHES, spec.ROWS, spec.FEATURES) and first.dtype == torch.float32
    assert torch.equal(first, again) and not torch.equal(first, other)
    out = baseline.forward(spec.make_weights(1, "cpu"), first)
    assert out.shape == (spec.BATCHES, spec.ROWS, spec.DIM) and out.device.type == "cpu"
    assert torch.allclose(out.norm(dim=-1), torch.ones(spec.BATCHES, spec.ROWS))  # unit rows, as an index wants
    assert PUZZLE.correctness.output == "host"


def test_the_tolerance_passes_fp32_in_any_order_and_fails_a_16_bit_trip():
    spec, baseline = module("spec.py", ON_THE_CPU), module("baseline.py")
    w, x = spec.make_weights(1, "cpu"), spec.make_input(2, "cpu")
    expected = baseline.forward(w, x)
    in_float64 = baseline.forward({k: v.double() for k, v in w.items()}, x.double()).float()
    all_at_once = baseline.embed(w, x)  # one matmul over every batch: another order of the same sums
    assert relative_l2(in_float64, expected) < PUZZLE.correctness.max_rel_l2 / 10
    assert relative_l2(all_at_once, expected) < PUZZLE.correctness.max_rel_l2 / 10
    assert relative_l2(expected.half().float(), expected) > 5 * PUZZLE.correctness.max_rel_l2  # fp16 across the link
    assert relative_l2(baseline.forward(w, x.half().float()), expected) > 5 * PUZZLE.correctness.max_rel_l2


def test_every_style_sizes_its_output_from_its_input():
    """No workload keeps the spec's sizes: the CPU tests and the sweep run them at other sizes."""
    for relative in ["baseline.py", *STYLES]:
        assert not hasattr(module(relative), "ROWS"), relative


@pytest.mark.gpu
@pytest.mark.parametrize("workload", STYLES)
def test_every_style_returns_the_baselines_embeddings_in_pinned_memory_the_caller_keeps(workload):
    spec, baseline, other = (module(f) for f in ("spec.py", "baseline.py", workload))
    weights = spec.make_weights(3, "cuda")
    state = other.prepare(weights, "cuda")
    first = other.forward(state, spec.make_input(4, "cuda"))
    kept = first.clone()
    x = spec.make_input(5, "cuda")
    got = other.forward(state, x)
    rel = relative_l2(got, baseline.forward(weights, x))
    print(f"{workload}: relative L2 {rel:.2e} against the baseline")
    assert rel < PUZZLE.correctness.max_rel_l2
    assert got.device.type == "cpu" and got.is_pinned() and torch.equal(first, kept)


UNWAITED = '''
import torch
import torch.nn.functional as F

def prepare(weights, device):
    return weights

def forward(w, x):
    out = torch.empty(x.shape[0], x.shape[1], w["w2"].shape[1], pin_memory=True)
    for i, batch in enumerate(x):
        out[i].copy_(F.normalize(F.gelu(batch @ w["w1"]) @ w["w2"], dim=-1), non_blocking=True)
    return out  # the copies may still be running: the caller reads whatever is there
'''
ON_THE_GPU = '''
import torch.nn.functional as F

def prepare(weights, device):
    return weights

def forward(w, x):
    return F.normalize(F.gelu(x @ w["w1"]) @ w["w2"], dim=-1)
'''
ONE_BUFFER = '''
import torch
import torch.nn.functional as F

def prepare(weights, device):
    return {"w": weights, "out": None}

def forward(s, x):
    w = s["w"]
    if s["out"] is None:
        s["out"] = torch.empty(x.shape[0], x.shape[1], w["w2"].shape[1], pin_memory=True)
    s["out"].copy_(F.normalize(F.gelu(x @ w["w1"]) @ w["w2"], dim=-1), non_blocking=True)
    torch.cuda.synchronize()
    return s["out"]  # the same buffer every call: the next call overwrites what the caller kept
'''


@pytest.mark.gpu
@pytest.mark.parametrize("source, words", [
    (UNWAITED, "still being written after forward() returned"), (ON_THE_GPU, "the output is on the GPU"), (ONE_BUFFER, "the next call changed the output"),
    (None, "matches baseline")])
def test_a_quick_check_refuses_results_not_waited_for_left_on_the_gpu_or_written_again(workspace, source, words):
    """Each would be faster than the reference, or as fast; each is caught on its first check. None: the reference,
    which passes."""
    from tutor.quick_check import quick_check

    target = workspace.editable_path(PUZZLE, "workload.py")
    if source is None:
        shutil.copy(PUZZLE.solution_path(), target)
    else:
        target.write_text(source)
    result = quick_check(workspace, PUZZLE)
    print(result.correctness.summary, result.correctness.details, result.speedup)
    assert result.correctness.passed == (source is None)
    assert words in " ".join([result.correctness.summary, *result.correctness.details])


def test_its_recording_shows_the_copies_the_story_names():
    """The baseline on the H100: 8 pageable copies back to the host a call, at about 1.4 GB/s, nearly all of the
    GPU's time; the matmuls a few percent of it."""
    assert not PUZZLE.draft
    recorded = ProfileMetrics.from_json((PUZZLE.recordings_dir / "baseline_metrics.json").read_text())
    v, spec = recorded.values, module("spec.py")
    assert v["memcpy.pageable_per_iter"] == spec.BATCHES and v["memcpy.h2d_bytes_per_iter"] == 0
    assert v["memcpy.d2h_bytes_per_iter"] == spec.BATCHES * spec.ROWS * spec.DIM * 4
    assert 0.5 < v["memcpy.d2h_gbps"] < 5  # the story's 1.4 GB/s, a link that carries fifty
    assert v["kernels.category.memcpy.share"] > 0.9 > 0.05 > v["kernels.category.gemm.share"]
