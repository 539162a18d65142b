"""Issue 76's class of a kernel registered in prepare() for an operator the harness's own work runs
(cheats/works_inside_the_harness.py). puzzle25 and puzzle26, on two gloo ranks at a CPU's sizes: the kernel, for
the operator the input making runs last, does a call's whole work, collectives included, while the harness makes
the input, and forward() serves it; through the real harness, the workload is refused as tampered before any
input is made, the operator named. puzzle20 and puzzle22, whose kernels run on CUDA alone: the kernel for the L2
flush before the call clock is named by the check the harness runs after prepare()."""

from __future__ import annotations

import pytest
import torch

from conftest import harness_check, puzzle_file, resized_copies
from test_multi_gpu_puzzles import _on_two_ranks
from tutor.catalog import get_puzzle
from tutor.runner import RunFailed

CHEAT = "cheats/works_inside_the_harness.py"
# Each puzzle's size line, and a CPU's share of it (each test file's own).
SIZES = {"puzzle25": ("LAYERS, TOKENS, HIDDEN, FFN = 8, 16384, 4096, 8192",
                      "LAYERS, TOKENS, HIDDEN, FFN = 8, 32, 64, 128", {"TOKENS": 64, "HIDDEN": 128, "FFN": 256}),
         "puzzle26": ("EXPERTS, TOKENS, HIDDEN, FFN = 8, 16384, 4096, 32768",
                      "EXPERTS, TOKENS, HIDDEN, FFN = 8, 512, 64, 32", {"TOKENS": 2048, "HIDDEN": 128, "FFN": 64})}


def _in_rank(rank: int, world: int, message: dict) -> dict:
    """In a rank: the cheat prepared, then the input made as the harness makes it; what the cheat kept meanwhile,
    and whether forward() serves it as the baseline's answer (computed once the cheat's kernel is gone)."""
    import torch.distributed as dist

    found = {}
    for puzzle_id, (_, _, small) in SIZES.items():
        puzzle = get_puzzle(puzzle_id)
        spec = puzzle_file(puzzle, "spec.py", small)
        weights = spec.shard(spec.make_weights(1, "cpu"), dist.get_rank(), world)
        cheat, baseline = puzzle_file(puzzle, CHEAT), puzzle_file(puzzle, "baseline.py")
        state = cheat.prepare(weights, "cpu")
        x = spec.make_input(2, "cpu")  # the harness's making: the cheat's kernel runs the forward here
        made_inside = len(cheat.kept)
        served = cheat.forward(state, x)
        cheat._library._destroy()
        honest = baseline.forward(baseline.prepare(weights, "cpu"), x)
        found[puzzle_id] = {"made_inside": made_inside, "served_right": torch.equal(served, honest),
                            "left": len(cheat.kept)}
    return found


def test_the_kernel_registered_in_prepare_does_the_calls_work_while_the_harness_makes_the_input():
    for reply in _on_two_ranks(_in_rank, "gloo"):
        assert reply == {p: {"made_inside": 1, "served_right": True, "left": 0} for p in SIZES}, reply


@pytest.mark.parametrize("puzzle_id", sorted(SIZES))
def test_the_harness_refuses_it_as_tampered_before_any_input_is_made(puzzle_id, tmp_path):
    puzzle = get_puzzle(puzzle_id)
    sizes_line, small_line, _ = SIZES[puzzle_id]
    spec = resized_copies(puzzle, ["spec.py"], {sizes_line: small_line}, tmp_path)["spec.py"]
    with pytest.raises(RunFailed) as info:
        harness_check(puzzle, CHEAT, tmp_path, spec=spec)
    print(info.value.kind, info.value)
    assert info.value.kind == "tampered" and "aten::_to_copy" in str(info.value)


@pytest.mark.parametrize("puzzle_id", ["puzzle20", "puzzle22"])
def test_a_kernel_registered_for_the_flush_is_named_by_the_harness_check(puzzle_id):
    from tutor.harness.dispatch_table import INTERNALS, DispatchTable

    table = DispatchTable(set(INTERNALS))  # among the operators every check reads: the flush's
    cheat = puzzle_file(get_puzzle(puzzle_id), CHEAT)
    try:
        cheat.prepare({"gain": torch.ones(8), "bias": torch.zeros(8)}, "cpu")
        found = table.changed()
    finally:
        cheat._library._destroy()
    assert [f.split(" ")[0] for f in found] == ["aten::zero_"], found
    assert table.changed() == []
