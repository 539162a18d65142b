"""puzzle26, Two GPUs, one at work (issue 38's load_imbalance), as far as the CPU can check it: the
scene's traffic is skewed as designed, the four most popular experts on one GPU; on two gloo ranks at a CPU's
sizes every style gives both ranks the baseline's output (a placement moves no token to another expert), and the
placements even the ranks' work out; a cheat that swaps every expert so each rank holds all eight is right too (its
memory is what refuses it on the GPUs: tests/test_multi_gpu_puzzles.py); the harness serves the scene on two ranks
and checks every call on each. Two H200s' grades and cheats' refusals, read from their fixtures: the tiers sit
clear of every grade.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import torch

from conftest import assert_each_cheat_refused, assert_every_call_checked_on_each_rank, graded_counts, puzzle_file
from test_grading_rules import assert_clear_of_every_bar
from test_multi_gpu_puzzles import _on_two_ranks, _styles_in_rank
from tutor.catalog import all_puzzles, get_puzzle

PUZZLE = get_puzzle("puzzle26")
FIXTURES = Path(__file__).parent / "fixtures"
SIZES_LINE = "EXPERTS, TOKENS, HIDDEN, FFN = 8, 16384, 4096, 32768"
SMALL = {"TOKENS": 2048, "HIDDEN": 128, "FFN": 64}
ROUTER = {"TOKENS": 4096, "HIDDEN": 4096, "FFN": 8}  # the router at its real width (columns of even norm), experts tiny
STYLES = ["baseline.py", "solution/workload.py", "alternatives/snake_by_bias.py", "alternatives/tensor_parallel.py",
          "cheats/every_expert_on_each_rank.py", "cheats/fp8_experts.py"]
FEWER_BITS = "cheats/fp8_experts.py"


def test_the_puzzle_ships_graded_on_two_gpus():
    assert not PUZZLE.draft and "puzzle26" in all_puzzles() and PUZZLE.hardware.gpus == 2


def test_its_grades_on_two_h200s_read_their_tiers_with_every_bar_3_5_percent_higher_or_lower():
    """On 2 x H200, five grades a style (MEASUREMENTS.md) and a sixth of the reference once it shipped: the reference
    (1.45-1.50x) and the snake by bias (1.40-1.50x) gold, tensor_parallel (1.27-1.29x) silver. Their calls vary 2-4%
    a grade (the ranks meet in the all-reduce); the snake's lowest lower bound (1.379) and tensor_parallel's highest
    (1.277) sit 8% apart, and gold between them keeps 3.5% or more from each."""
    grades = json.loads((FIXTURES / "grades_puzzle26_2026-11-28.json").read_text())
    assert graded_counts(grades) == {"reference": 6, "alternatives/snake_by_bias": 5, "alternatives/tensor_parallel": 5}
    assert_clear_of_every_bar(grades, margin=0.035)


# Owed its grades on two GPUs (issue 77's machine): the kernel registered for an operator of the harness's input
# making (issue 76), refused on two gloo ranks by tests/test_works_inside_the_harness.py.
TWO_GPUS_OWED = frozenset({"cheats/works_inside_the_harness"})


def test_two_h200s_refused_every_cheat_three_times():
    """`benchmarks/grade_cheats.py puzzle26 --runs 3` on 2 x H200: every expert on each rank (1.38-1.42x) refused at
    fair play for the 4096 MiB it kept a rank, fp8 experts (0.60x, 5.4e-2 off) at correctness and performance, the
    workload that blanks the calls it takes for unchecked (4.7-5.2x) at correctness and by the physical floor."""
    refusals = {"cheats/every_expert_on_each_rank": {"fair play"}, "cheats/fp8_experts": {"correctness", "performance"},
                "cheats/reads_which_call_is_checked": {"correctness", "physical floor"}}
    assert_each_cheat_refused(PUZZLE, FIXTURES / "cheats_puzzle26_2026-11-28.json", refusals, times=3,
                              owed=TWO_GPUS_OWED)


def routed_shares(spec, seed: int) -> torch.Tensor:
    weights, x = spec.make_weights(seed, "cpu"), spec.make_input(seed, "cpu")
    choice = (x.float() @ weights["router"] + weights["bias"]).argmax(dim=1)
    return torch.bincount(choice, minlength=spec.EXPERTS).double() / len(choice)


@pytest.mark.parametrize("seed", range(6))
def test_the_four_most_popular_experts_draw_most_of_the_traffic_on_one_gpu(seed):
    """Which GPU and which of its experts is drawn from the seed; the shares follow spec.POPULARITY: the busy GPU's
    experts draw about 80% of the tokens, and an even placement exists (each GPU about half)."""
    spec = puzzle_file(PUZZLE, "spec.py", ROUTER)
    share = routed_shares(spec, seed)
    busy = max(float(share[:4].sum()), float(share[4:].sum()))
    assert 0.76 < busy < 0.86, share
    assert sorted(share.tolist(), reverse=True)[0] < 0.35


def _unsplit(weights: dict, x: torch.Tensor) -> torch.Tensor:
    """The layer on one device: every token through its expert."""
    logits = x.float() @ weights["router"] + weights["bias"]
    gate, choice = logits.softmax(dim=1).max(dim=1)
    out = torch.zeros_like(x)
    for e, expert in enumerate(weights["experts"]):
        rows = (choice == e).nonzero().squeeze(1)
        y = torch.nn.functional.gelu(x[rows] @ expert["w1"]) @ expert["w2"]
        out[rows] = (gate[rows, None] * y).to(x.dtype)
    return out


def _puzzle26_rank(rank: int, world: int, message: dict) -> dict:
    return _styles_in_rank(PUZZLE, STYLES, SMALL, _unsplit)


def test_every_style_gives_both_ranks_the_baselines_output_on_two_cpu_ranks():
    """And fp8 operands miss it by several times the tolerance. Every honest style's prepared state keeps no more
    bytes than the rank's shard (a split expert's half kept as a view would keep the whole expert: the GPUs' rule
    refused tensor_parallel so), the cheat that gathers every expert twice them."""
    replies = _on_two_ranks(_puzzle26_rank, "gloo")
    for reply in replies:
        print(reply["errors"], reply["kept_bytes"], reply["shard_bytes"])
        honest = [s for s in STYLES if not s.startswith("cheats/")]
        assert all(reply["kept_bytes"][s] <= reply["shard_bytes"] for s in honest), reply["kept_bytes"]
        assert reply["kept_bytes"]["cheats/every_expert_on_each_rank.py"] > 1.9 * reply["shard_bytes"]
        errors = reply["errors"]
        assert max(e for s, e in errors.items() if s != FEWER_BITS) < PUZZLE.correctness.max_rel_l2 / 2, errors
        assert errors[FEWER_BITS] > 2 * PUZZLE.correctness.max_rel_l2  # fp8's rounding shows: no residual hides it
        assert reply["unsplit_rel"] < PUZZLE.correctness.max_rel_l2 / 2
    assert replies[0]["baseline_digest"] == replies[1]["baseline_digest"]


@pytest.mark.parametrize("workload", ["solution/workload.py", "alternatives/snake_by_bias.py"])
def test_each_placement_gives_each_gpu_about_half_of_the_work(workload):
    """The experts each style's ranks end up with, weighed by the traffic they draw: the baseline's busy GPU takes
    about 80%, the reference's about half (the most even of the 70 ways), the snake 52-54% on these seeds."""
    spec = puzzle_file(PUZZLE, "spec.py", ROUTER)
    module = puzzle_file(PUZZLE, workload)
    for seed in range(6):
        share = routed_shares(spec, seed)
        weights = spec.make_weights(seed, "cpu")
        if workload == "solution/workload.py":
            rank0 = module.balanced_half(share)
        else:
            order = torch.argsort(weights["bias"], descending=True).tolist()
            rank0 = {e for e, owner in zip(order, module.SNAKE) if owner == 0}
        busiest = max(float(share[list(rank0)].sum()), 1 - float(share[list(rank0)].sum()))
        print(workload, seed, round(busiest, 3))
        assert len(rank0) == 4 and busiest < (0.53 if workload == "solution/workload.py" else 0.6)


def test_the_harness_serves_the_scene_on_two_ranks_and_checks_every_call_on_each(tmp_path):
    """Graded as the GPUs grade it, on two gloo ranks at a CPU's sizes: the reference right on every check and
    every timed call of both ranks; the workload that returns zeros on the calls it takes for unchecked wrong on
    those."""
    small = "EXPERTS, TOKENS, HIDDEN, FFN = 8, 512, 64, 32"
    assert_every_call_checked_on_each_rank(PUZZLE, SIZES_LINE, small, tmp_path)


def test_the_floor_is_half_the_tokens_expert_matmuls():
    spec = puzzle_file(PUZZLE, "spec.py")
    assert spec.least_work(50 * 2**20)["flops"] == 2 * 16384 * 4096 * 32768
    shard = spec.shard({"experts": list(range(8)), "router": "r", "bias": "b"}, 1, 2)
    assert shard == {"experts": [4, 5, 6, 7], "first": 4, "router": "r", "bias": "b"}


@pytest.mark.gpu
def test_gpu_every_style_gives_both_ranks_the_baselines_output_at_the_scenes_sizes():
    replies = _on_two_ranks(_puzzle26_rank, "nccl")
    for reply in replies:
        print("nccl", reply["errors"], "unsplit", reply["unsplit_rel"])
        errors = reply["errors"]
        assert max(e for s, e in errors.items() if s != FEWER_BITS) < PUZZLE.correctness.max_rel_l2 / 2, errors
        assert errors[FEWER_BITS] > 2 * PUZZLE.correctness.max_rel_l2
    assert replies[0]["baseline_digest"] == replies[1]["baseline_digest"]


def test_its_sweep_shows_each_placement_on_two_ranks(tmp_path):
    """sweeps/placements.py, the measurement owed on two GPUs, on two gloo ranks at a CPU's sizes: a row per seed and
    workload, each rank's experts and tokens; the baseline's by index, the reference's evener."""
    import os
    import subprocess
    import sys

    out = tmp_path / "sweep.json"
    done = subprocess.run([sys.executable, str(PUZZLE.folder / "sweeps" / "placements.py"), "--device", "cpu",
                           "--calls", "1", "--seeds", "0", "--json", str(out)],
                          env={**os.environ, "PYTHONPATH": str(PUZZLE.folder.parents[1])},
                          capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr[-2000:]
    rows = {r["workload"]: r for r in json.loads(out.read_text())}
    assert set(rows) == {"baseline.py", "solution/workload.py", "alternatives/snake_by_bias.py",
                         "alternatives/tensor_parallel.py"}
    assert [r["experts"] for r in rows["baseline.py"]["ranks"]] == [[0, 1, 2, 3], [4, 5, 6, 7]]
    # Split experts: each rank holds half of all eight and runs every token through its half.
    assert [r["experts"] for r in rows.pop("alternatives/tensor_parallel.py")["ranks"]] == [list(range(8))] * 2
    for row in rows.values():
        assert sorted(e for r in row["ranks"] for e in r["experts"]) == list(range(8))
        assert sum(r["tokens"] for r in row["ranks"]) == 512
    busiest = {w: max(r["tokens"] for r in row["ranks"]) for w, row in rows.items()}
    assert busiest["solution/workload.py"] < 0.6 * 512 < 0.75 * 512 < busiest["baseline.py"]
