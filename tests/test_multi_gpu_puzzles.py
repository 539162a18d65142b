"""The multi-GPU puzzles (issue 18), as far as the CPU can check them: puzzle13's styles give rank 0 the same
bits on two gloo ranks; puzzle16's handoffs give rank 0 the same bits through the host or GPU to GPU; puzzle19's
decode step, chunked or not, gives rank 0 the same hidden states; their grades and rank-0 recordings from
2 x H200 read here as there. The NCCL cases (`gpu`) run the same styles on two GPUs.
"""

from __future__ import annotations

import hashlib
from pathlib import Path

import pytest
import torch

from conftest import harness_check, puzzle_file, relative_l2
from tutor.catalog import get_puzzle

# -- puzzle13: a tensor-parallel MLP that all-reduces one request at a time (two gloo ranks on the CPU) ------

P13 = get_puzzle("puzzle13")
# The coalescing manager is NCCL's: gloo does not implement it, so that style is the GPUs' to check.
P13_STYLES = ["baseline.py", "solution/workload.py", "alternatives/buckets.py", "alternatives/coalesced.py"]


def _on_two_ranks(handler, backend: str) -> list[dict]:
    """Two ranks, as the grade runs them (tutor.harness.ranks), each running every style of a multi-GPU puzzle
    (`handler`). The replies, rank by rank."""
    from tutor.harness import ranks

    if backend == "nccl" and torch.cuda.device_count() < 2:
        pytest.skip("needs 2 GPUs")
    group = ranks.start(2, handler, backend)
    try:
        return group.ask("styles")
    finally:
        group.stop()


def _compared(outputs: dict, unsplit: torch.Tensor) -> dict:
    """In a rank: what the tests assert of its outputs, as plain values. The pytest process runs no torch op on
    them: a parent whose OpenMP pool has run forks children that can hang in their first parallel region (two
    NCCL tests in one process stalled so on 2 x H200)."""
    baseline = outputs["baseline.py"]
    return {"differ": [s for s, out in outputs.items() if not torch.equal(out, baseline)],
            "errors": {s: relative_l2(out, baseline) for s, out in outputs.items()},
            "unsplit_rel": relative_l2(baseline, unsplit), "baseline_is_unsplit": torch.equal(baseline, unsplit),
            "baseline_digest": hashlib.sha256(baseline.cpu().float().numpy().tobytes()).hexdigest()}


def storage_bytes(state) -> int:
    """The bytes of every tensor storage `state` (dicts, lists, tuples of tensors) keeps alive, each storage once:
    a view of a whole tensor keeps the whole of it (the CPU's reading of what the GPUs' rule counts,
    shards.over_shard)."""
    seen = {}

    def walk(x):
        if isinstance(x, torch.Tensor):
            storage = x.untyped_storage()
            seen[storage.data_ptr()] = storage.nbytes()
        elif isinstance(x, (list, tuple)):
            for v in x:
                walk(v)
        elif isinstance(x, dict):
            for v in x.values():
                walk(v)

    walk(state)
    return sum(seen.values())


def _styles_in_rank(puzzle, styles: list[str], cpu_sizes: dict, unsplit) -> dict:
    """In a rank: each style of `puzzle` on the same input, the spec's sizes set to `cpu_sizes` on the CPU (the
    same split, a CPU's share of it), compared with the baseline's output and with `unsplit(weights, x)`; with the
    bytes each style's prepared state keeps and the shard's."""
    import torch.distributed as dist

    device = "cpu" if dist.get_backend() == "gloo" else "cuda"
    spec = puzzle_file(puzzle, "spec.py", cpu_sizes if device == "cpu" else None)
    weights, x = spec.make_weights(1, device), spec.make_input(2, device)
    outputs, kept = {}, {}
    for style in styles:  # each given this rank's shard alone, as the grade gives it (tutor.harness.shards)
        module = puzzle_file(puzzle, style)
        state = module.prepare(spec.shard(weights, dist.get_rank(), 2), device)
        kept[style] = storage_bytes(state)
        outputs[style] = module.forward(state, x)
    shard_bytes = storage_bytes(spec.shard(weights, dist.get_rank(), 2))
    return {**_compared(outputs, unsplit(weights, x)), "kept_bytes": kept, "shard_bytes": shard_bytes}


def _puzzle13_rank(rank: int, world: int, message: dict) -> dict:
    import torch.distributed as dist

    styles = P13_STYLES[:3] if dist.get_backend() == "gloo" else P13_STYLES
    return _styles_in_rank(P13, styles, {"BATCH": 64, "HIDDEN": 128, "FFN": 256},
                           lambda w, x: torch.relu(x @ w["w1"]) @ w["w2"])


@pytest.mark.parametrize("backend", ["gloo", pytest.param("nccl", marks=pytest.mark.gpu)])
def test_puzzle13_every_style_gives_rank_0_the_baselines_output_bit_for_bit(backend):
    """Two ranks, as the grade runs them (tutor.harness.ranks): the bucketing of the sum changes no bit
    (a + b, two ranks), and the halves add up to the unsplit MLP up to bf16's rounding of the split sum."""
    replies = _on_two_ranks(_puzzle13_rank, backend)
    assert [r["differ"] for r in replies] == [[], []] and replies[0]["unsplit_rel"] < 2e-2


# -- puzzle16: a two-stage pipeline that hands its activations over through the host (two gloo ranks on the CPU) --

P16 = get_puzzle("puzzle16")
P16_STYLES = ["baseline.py", "solution/workload.py", "alternatives/broadcast_both_ways.py",
              "alternatives/batched_p2p.py"]


def _puzzle16_rank(rank: int, world: int, message: dict) -> dict:
    return _styles_in_rank(P16, P16_STYLES, {"TOKENS": 64, "HIDDEN": 128},
                           lambda w, x: torch.nn.functional.gelu(x @ w["w0"]) @ w["w1"])


@pytest.mark.parametrize("backend", ["gloo", pytest.param("nccl", marks=pytest.mark.gpu)])
def test_puzzle16_every_style_gives_rank_0_the_baselines_output_bit_for_bit(backend):
    """Two ranks, as the grade runs them (tutor.harness.ranks): every handoff moves the same bytes, so every
    style's output is the baseline's to the bit on both ranks, and it is the unsplit block's."""
    replies = _on_two_ranks(_puzzle16_rank, backend)
    assert [r["differ"] for r in replies] == [[], []] and replies[0]["baseline_is_unsplit"]


# -- puzzle19: a tensor-parallel decode step chunked for overlap (two gloo ranks on the CPU) ---------------------

P19 = get_puzzle("puzzle19")
P19_STYLES = ["baseline.py", "solution/workload.py", "alternatives/two_chunks.py", "alternatives/graphed_step.py"]


def _puzzle19_rank(rank: int, world: int, message: dict) -> dict:
    return _styles_in_rank(P19, P19_STYLES, {"HIDDEN": 128, "FFN": 256}, _unsplit_layers)  # 16 tokens, 2 layers


def _unsplit_layers(weights: dict, x: torch.Tensor) -> torch.Tensor:
    """puzzle19's layers computed whole on one device: what the halves' sums must add up to."""
    for layer in weights["layers"]:
        x = x + torch.relu(x @ layer["w1"]) @ layer["w2"]
    return x


@pytest.mark.parametrize("backend", ["gloo", pytest.param("nccl", marks=pytest.mark.gpu)])
def test_puzzle19_every_style_gives_rank_0_the_baselines_step_within_its_tolerance(backend):
    """Two ranks, as the grade runs them (tutor.harness.ranks): chunked or not, graphed or not, every style's
    hidden states are the baseline's within the puzzle's tolerance on each rank, and the unsplit layers'."""
    replies = _on_two_ranks(_puzzle19_rank, backend)
    for reply in replies:
        print(backend, reply["errors"])
        assert max(reply["errors"].values()) < P19.correctness.max_rel_l2, reply["errors"]
        assert reply["unsplit_rel"] < 2e-2
    assert replies[0]["baseline_digest"] == replies[1]["baseline_digest"]  # both ranks hold the same sum


@pytest.mark.parametrize("puzzle_id", ["puzzle16", "puzzle19"])
@pytest.mark.parametrize("when", ["2026-11-26", "shards_2026-11-27"])
def test_their_h200_grades_read_the_tier_they_read_then_under_todays_bars(puzzle_id, when):
    """Their grades on 2 x H200 (MEASUREMENTS.md), before and after each rank was given its shard alone and every
    rank's output checked (issue 37): each grade's tier again from its speed-up's interval under puzzle.toml's
    bars, as it read then, each style at the tier the toml expects. (puzzle13's tiers moved after its first
    grades: tests/test_grading_rules.py reads them under today's bars.)"""
    import json

    from test_grading_rules import tiers_expected, tiers_read_as_then

    fixture = Path(__file__).parent / "fixtures" / f"grades_{puzzle_id}_{when}.json"
    assert tiers_read_as_then(json.loads(fixture.read_text())) == tiers_expected(get_puzzle(puzzle_id))


def test_their_recordings_show_what_their_diagnosis_cites():
    """Rank 0's baseline profiles on 2 x H200 (each puzzle's recordings), read here as there: puzzle13's 256
    all-reduces a call, NCCL nearly all of the GPU's time; puzzle16's two 8 MB copies through pageable host
    memory a call, the GPU mostly idle; puzzle19's 52 kernels a call, NCCL's all-reduces a seventh to a fifth of
    its GPU time (two recordings) beside the matmuls that read the weights four times; puzzle25's two GPUs each
    busy nearly all of a call, half of it in NCCL's kernels that move a quarter of a gigabyte at under a tenth of
    the link's rate (each waits for the other stage); puzzle26's rank 0 in its matmuls nearly four times as long as
    rank 1, which spends most of its GPU time in NCCL's kernel waiting for it."""
    import json

    from conftest import recording
    from tutor.profilers.torch_trace import extract

    for puzzle_id in ("puzzle13", "puzzle16", "puzzle19", "puzzle25", "puzzle26"):
        recorded = json.loads(recording(puzzle_id, "metrics.json").read_text())["values"]
        v = extract(recording(puzzle_id, "trace.json.gz")).values
        assert {k: v[k] for k in v} == {k: recorded[k] for k in v}, puzzle_id
    p13 = json.loads(recording("puzzle13", "metrics.json").read_text())["values"]
    assert p13["kernels.per_iter"] == 259 and p13["kernels.category.comm.share"] > 0.99
    p16 = json.loads(recording("puzzle16", "metrics.json").read_text())["values"]
    assert p16["memcpy.pageable_per_iter"] == 2 and p16["memcpy.d2h_bytes_per_iter"] == 8 << 20
    assert p16["kernels.category.memcpy.share"] > 0.9 and p16["gpu.busy_fraction"] < 0.2
    p19 = json.loads(recording("puzzle19", "metrics.json").read_text())["values"]
    assert p19["kernels.per_iter"] == 52 and 0.1 < p19["kernels.category.comm.share"] < 0.25
    assert p19["kernels.category.gemm.share"] > 0.7
    p25 = json.loads(recording("puzzle25", "metrics.json").read_text())["values"]
    assert p25["gpu.busy_fraction"] > 0.95 and p25["rank1.gpu.busy_fraction"] > 0.95
    assert 0.4 < p25["kernels.category.comm.share"] < 0.6 and 0.4 < p25["rank1.kernels.category.comm.share"] < 0.6
    assert p25["comm.bytes_per_iter"] == 2 * 16384 * 4096 * 2 and p25["comm.link_peak_share"] < 0.1
    p26 = json.loads(recording("puzzle26", "metrics.json").read_text())["values"]
    assert p26["kernels.category.gemm.us_per_iter"] > 3.5 * p26["rank1.kernels.category.gemm.us_per_iter"]
    assert p26["kernels.category.comm.share"] < 0.1 and p26["rank1.kernels.category.comm.share"] > 0.6


def _link_probe_rank(rank: int, world: int, message: dict) -> dict:
    from tutor.harness.link_probe import all_reduce_bus_gbps

    return {"gbps": all_reduce_bus_gbps()}


@pytest.mark.gpu
def test_the_link_probe_reads_the_link_between_two_gpus():
    """What a multi-GPU profile reads its collectives against (comm.link_peak_gbps): on NVLink hundreds of GB/s
    (2 x H200: a 512 MiB all-reduce ran at 299 GB/s, benchmarks/collectives.py), both ranks the same call."""
    replies = _on_two_ranks(_link_probe_rank, "nccl")
    print("link probe, bus GB/s by rank:", [round(r["gbps"], 1) for r in replies])
    assert all(r["gbps"] > 20 for r in replies)


# -- each rank holds its shard alone (issue 37, tutor.harness.shards): graded on two GPUs ---------------------------

# Each multi-GPU puzzle's honest styles, and its cheats that gather the other rank's weights in prepare().
HONEST = {"puzzle13": ["solution/workload.py", "alternatives/buckets.py", "alternatives/coalesced.py"],
          "puzzle16": ["solution/workload.py", "alternatives/batched_p2p.py", "alternatives/broadcast_both_ways.py"],
          "puzzle19": ["solution/workload.py", "alternatives/two_chunks.py", "alternatives/graphed_step.py"],
          "puzzle25": ["solution/workload.py", "alternatives/two_halves.py", "alternatives/tensor_parallel.py",  # drafts
                       "alternatives/posted_receives.py"],
          "puzzle26": ["solution/workload.py", "alternatives/snake_by_bias.py",
                       "alternatives/tensor_parallel.py"]}
GATHERING = {"puzzle13": "cheats/gathers_the_other_half.py", "puzzle16": "cheats/one_rank_runs_both_stages.py",
             "puzzle19": "cheats/gathers_the_other_half.py", "puzzle25": "cheats/whole_model_on_each_rank.py",
             "puzzle26": "cheats/every_expert_on_each_rank.py"}


@pytest.mark.gpu
@pytest.mark.parametrize("puzzle_id", sorted(HONEST))
def test_gpu_each_rank_keeps_its_shard_alone_and_a_rank_that_gathers_the_others_is_refused(puzzle_id, tmp_path):
    """Through the grade's harness on two GPUs (NCCL), a few rounds each: every honest style keeps its shard and
    less than the spec's slack past it, on every rank, and passes every check; a cheat that gathers the other
    rank's weights is right but named at fair play for what it kept."""
    if torch.cuda.device_count() < 2:
        pytest.skip("needs 2 GPUs")
    puzzle = get_puzzle(puzzle_id, drafts=True)
    for style in [*HONEST[puzzle_id], GATHERING[puzzle_id]]:
        result = harness_check(puzzle, style, tmp_path, device="cuda", checks=2, warmup=2, rounds=3)
        kept = result["memory"]["rank_kept"]
        print(puzzle_id, style, [(k["rank"], round(k["kept_bytes"] / 2**20, 1), k["shard_bytes"] >> 20,
                                  k["slack_bytes"] >> 20) for k in kept], result["violations"])
        errors = [c["rel_l2"] for c in result["checks"] + result["timed_checks"]]
        assert len(kept) == 2 and max(errors) <= max(puzzle.correctness.max_rel_l2, 1e-2), errors
        if style.startswith("cheats/"):
            assert any("more than its shard of the weights" in v for v in result["violations"]), result["violations"]
        else:
            assert not result["violations"]
