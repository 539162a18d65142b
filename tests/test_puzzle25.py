"""puzzle25, Two cards, one card's time (issue 38's pipeline_bubbles). On two gloo ranks at a CPU's sizes, every honest
style gives both ranks the baseline's hidden states within the tolerance, and the unsplit model's; a cheat that swaps
the stages so each rank holds the whole model is right too (its memory is what refuses it on the GPUs:
tests/test_multi_gpu_puzzles.py); the harness serves the scene on two ranks and checks every call on each. Its
grades and its cheats' on 2 x H200, its card, read back under today's bars (MEASUREMENTS.md).
"""

from __future__ import annotations

import pytest
import torch

import json
from pathlib import Path

from conftest import assert_each_cheat_refused, assert_every_call_checked_on_each_rank, graded_counts, puzzle_file
from test_multi_gpu_puzzles import _on_two_ranks, _styles_in_rank
from test_grading_rules import assert_clear_of_every_bar
from tutor.catalog import all_puzzles, get_puzzle

PUZZLE = get_puzzle("puzzle25")
FIXTURES = Path(__file__).parent / "fixtures"
SIZES_LINE = "LAYERS, TOKENS, HIDDEN, FFN = 8, 16384, 4096, 8192"
SMALL = {"TOKENS": 64, "HIDDEN": 128, "FFN": 256}  # eight layers, four a stage, as on the GPUs
STYLES = ["baseline.py", "solution/workload.py", "alternatives/two_halves.py", "alternatives/tensor_parallel.py",
          "alternatives/posted_receives.py", "cheats/whole_model_on_each_rank.py", "cheats/fp8_stages.py"]
FEWER_BITS = "cheats/fp8_stages.py"


def test_the_puzzle_ships_for_two_gpus():
    assert not PUZZLE.draft and "puzzle25" in all_puzzles() and PUZZLE.hardware.gpus == 2


def test_its_grades_on_two_h200s_read_their_tiers_with_every_bar_4_percent_higher_or_lower():
    """`benchmarks/measure_draft.py puzzle25 ...` on 2 x H200, two device calls: two halves bronze (1.28x), four
    micro-batches with every receive posted ahead silver (1.42x), tensor parallelism silver (1.50x), eight handed on
    in pairs gold (1.64x). The styles lie 9-15% apart and each grade within 0.2% of its style's median, so the bars
    sit 4-5% from the styles on their sides, not 10% (posted_receives graded six times: four in the first call,
    two in a later one, 1.428x and 1.434x)."""
    grades = json.loads((FIXTURES / "grades_puzzle25_2026-11-28.json").read_text())
    assert graded_counts(grades) == {"reference": 5, "alternatives/posted_receives": 6,
                                     "alternatives/two_halves": 5, "alternatives/tensor_parallel": 5}
    assert_clear_of_every_bar(grades, margin=0.04)


# Owed its grades on two GPUs (issue 77's machine): the kernel registered for an operator of the harness's input
# making (issue 76), refused on two gloo ranks by tests/test_works_inside_the_harness.py.
TWO_GPUS_OWED = frozenset({"cheats/works_inside_the_harness"})


def test_two_h200s_refused_every_cheat_three_times():
    """`benchmarks/grade_cheats.py puzzle25 --runs 3` on 2 x H200: fp8 stages (0.75x) refused at correctness and
    performance, the whole model on each rank (1.86x) at fair play for the memory it kept, the workload that blanks
    the calls it takes for unchecked (5.9x) at correctness and by the physical floor."""
    refusals = {"cheats/fp8_stages": {"correctness", "performance"}, "cheats/whole_model_on_each_rank": {"fair play"},
                "cheats/reads_which_call_is_checked": {"correctness", "physical floor"}}
    assert_each_cheat_refused(PUZZLE, FIXTURES / "cheats_puzzle25_2026-11-28.json", refusals, times=3,
                              owed=TWO_GPUS_OWED)


def _unsplit(weights: dict, x: torch.Tensor) -> torch.Tensor:
    """The eight layers run one after another on one device: what the two stages must add up to."""
    for w in weights["layers"]:
        x = x + torch.nn.functional.gelu(x @ w["w1"]) @ w["w2"]
    return x


def _puzzle25_rank(rank: int, world: int, message: dict) -> dict:
    return _styles_in_rank(PUZZLE, STYLES, SMALL, _unsplit)


def within_and_without(errors: dict) -> None:
    """Every style but fp8's within half the tolerance of the baseline; fp8's more than twice it."""
    assert max(e for s, e in errors.items() if s != FEWER_BITS) < PUZZLE.correctness.max_rel_l2 / 2, errors
    assert errors[FEWER_BITS] > 2 * PUZZLE.correctness.max_rel_l2, errors


def test_every_style_gives_both_ranks_the_baselines_hidden_states_on_two_cpu_ranks():
    """Micro-batched or not, the same bits; re-laid out into tensor parallelism, bf16's rounding of its halves."""
    replies = _on_two_ranks(_puzzle25_rank, "gloo")
    for reply in replies:
        print(reply["errors"])
        within_and_without(reply["errors"])
        assert reply["baseline_is_unsplit"]  # the stages hand the hidden states on whole: the same sums, in order
    assert replies[0]["baseline_digest"] == replies[1]["baseline_digest"]


def test_the_harness_serves_the_scene_on_two_ranks_and_checks_every_call_on_each(tmp_path):
    """Graded as the GPUs grade it, on two gloo ranks at a CPU's sizes: the reference right on every check and
    every timed call of both ranks; the workload that blanks the calls it takes for unchecked wrong on those."""
    assert_every_call_checked_on_each_rank(PUZZLE, SIZES_LINE, "LAYERS, TOKENS, HIDDEN, FFN = 8, 32, 64, 128", tmp_path)


def test_the_floor_is_one_stages_matmuls():
    spec = puzzle_file(PUZZLE, "spec.py")
    assert spec.least_work(50 * 2**20)["flops"] == 2 * 2 * 16384 * 4096 * 8192 * 4
    shard = spec.shard({"layers": list(range(8))}, 1, 2)
    assert shard == {"layers": [4, 5, 6, 7]}


@pytest.mark.gpu
def test_gpu_every_style_gives_both_ranks_the_baselines_hidden_states_at_the_scenes_sizes():
    replies = _on_two_ranks(_puzzle25_rank, "nccl")
    for reply in replies:
        print("nccl", reply["errors"], "unsplit", reply["unsplit_rel"])
        within_and_without(reply["errors"])
    assert replies[0]["baseline_digest"] == replies[1]["baseline_digest"]


def test_its_sweep_times_each_count_of_micro_batches_on_two_ranks(tmp_path):
    """sweeps/microbatches.py, the measurement owed on two GPUs, on two gloo ranks at a CPU's sizes: a row per
    count, each right against the baseline's output, with two stages' ideal beside it."""
    import json
    import os
    import subprocess
    import sys

    out = tmp_path / "sweep.json"
    done = subprocess.run([sys.executable, str(PUZZLE.folder / "sweeps" / "microbatches.py"), "--device", "cpu",
                           "--calls", "1", "--counts", "1", "4", "--json", str(out)],
                          env={**os.environ, "PYTHONPATH": str(PUZZLE.folder.parents[1])},
                          capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr[-2000:]
    rows = json.loads(out.read_text())
    assert set(rows) == {"1", "4"} and rows["4"]["two_stage_ideal"] == 1.6
    assert all(r["rel_l2"] == 0 and r["ms_a_call"] > 0 for r in rows.values())
