"""Every puzzle's cheats/ folder: workloads a grade must refuse, each saying what it tries and what it must get.

Graded on the GPU with `benchmarks/grade_stability.py PUZZLE --which cheats/NAME` (their verdicts in the
puzzle's MEASUREMENTS.md); here, each one's own words, and those whose scene runs on the CPU graded for real.
"""

from __future__ import annotations

import ast
import json
import re
from pathlib import Path

import pytest
import torch

from conftest import PUZZLE4_NARROW, resized_copies
from tutor.catalog import all_puzzles, get_puzzle
from tutor.harness import call_checks
from tutor.harness.checks import compare
from tutor.harness.loading import load_module
from tutor.harness.wire import portable
from tutor.harness.worker import SERVING_WORKLOAD_API, WORKLOAD_API
from tutor.runner import run_harness

CHEATS = [(p, path) for p in all_puzzles(drafts=True).values() for path in sorted(p.folder.glob("cheats/*.py"))]


@pytest.mark.parametrize("puzzle, path", CHEATS, ids=[f"{p.id}/{path.stem}" for p, path in CHEATS])
def test_each_cheat_says_what_it_tries_and_what_it_must_get(puzzle, path):
    doc = " ".join((ast.get_docstring(ast.parse(path.read_text())) or "").split())
    assert "Must get:" in doc and "cheat" in doc.lower(), path
    defined = {n.name for n in ast.parse(path.read_text()).body if isinstance(n, (ast.FunctionDef, ast.ClassDef))}
    assert set(SERVING_WORKLOAD_API if puzzle.serving else WORKLOAD_API) <= defined


def test_the_gpu_puzzles_have_cheats_of_the_classes_that_apply():
    # Issue 37's classes: one checked call in a loop (1-6, 8-11, 14, 17), outputs the caller cannot use (1-3, 7,
    # 12), work done where the clock does not see it (1, 9, 11, 12, 15), work past the clock (10, 15, 17), a scene
    # answered by a table (4, 8, 14), a server that does other work than the model's (18), a rank that does every
    # rank's work or whose output went unread (13, 16, 19). Every GPU puzzle has two classes at least.
    gpu = {p.id for p in all_puzzles(drafts=True).values() if p.hardware.device == "cuda"}
    have = [p.id for p, _ in CHEATS]
    assert all(have.count(puzzle) >= 2 for puzzle in gpu), {puzzle: have.count(puzzle) for puzzle in gpu}
    assert gpu <= set(have)


# puzzle4's scene at a CPU's sizes, for its baseline and cheats.
P4_NARROW = {line: narrow for line, narrow in PUZZLE4_NARROW.items() if "CHUNK" not in line}


def test_puzzle4s_cheat_that_batches_the_loops_inputs_serves_them_where_they_exist_ahead(tmp_path):
    """Issue 76's class on puzzle4: where a loop's inputs exist before its first call (as the CUDA call clock's did),
    the first call finds the others alive and decodes them all as one batch, and each later call is served from its
    table with tokens the judge accepts: no launch saved but by batching calls. The harness makes each input after the
    call before, on the CPU and on CUDA, and the class finds nothing (tests/test_every_call_checked.py)."""
    puzzle = get_puzzle("puzzle4")
    names = ["spec.py", "cheats/batches_the_loops_inputs.py"]
    paths = resized_copies(puzzle, names, P4_NARROW, tmp_path)
    spec, cheat = (load_module(paths[n], f"p4_narrow_{i}", ()) for i, n in enumerate(names))
    weights = spec.make_weights(1, "cpu")
    inputs = [spec.make_input(seed, "cpu") for seed in (11, 12, 13)]
    state = cheat.prepare(weights, "cpu")
    served = [cheat.forward(state, inputs[0])]
    ahead = len(cheat.table)
    served += [cheat.forward(state, x) for x in inputs[1:]]
    assert ahead >= 2 and not set(map(cheat.key, inputs)) & set(cheat.table)
    # Judged as a grade judges it (batched, a sum's order may move a near tie: the judge allows for that).
    assert all(compare(*map(portable, spec.judge(weights, x, out)))["rel_l2"] == 0.0 for x, out in zip(inputs, served))


def test_puzzle4s_cheat_that_skips_calls_back_to_back_is_refused_on_the_cpu(tmp_path):
    """puzzle4's scene and baseline, decoded on the CPU at a CPU's sizes (P4_NARROW): the calls it answers
    with every sequence ended are caught."""
    puzzle = get_puzzle("puzzle4")
    # On the CPU each loop call's input is made once the call before returned (a few ms on a loaded machine): the
    # class tells the loop's calls by a gap of its own host clock, there a longer one.
    narrow = {**P4_NARROW, "PAUSE_S = 0.01": "PAUSE_S = 0.2"}
    paths = resized_copies(puzzle, ["spec.py", "baseline.py", "cheats/skips_calls_back_to_back.py"], narrow, tmp_path)
    request = {"mode": "check", "device": "cpu", "seed": 11, "spec": str(paths["spec.py"]),
               "workloads": {"baseline": str(paths["baseline.py"]),
                             "mine": str(paths["cheats/skips_calls_back_to_back.py"])},
               "prepare": ["baseline", "mine"], "time": ["baseline", "mine"], "candidate": "mine",
               "oracle": "baseline", "correctness": {"checks": 2, "judged": True},
               "timing": {"warmup": 1, "rounds": 8}}
    result = run_harness(request, tmp_path / "run", 300).result
    limit = puzzle.correctness.max_rel_l2
    # Judged along its own path, as a grade judges it: a decoded call reads 0, one answered ended far more (a check
    # that came as soon after a call is answered ended too, and caught as the timed calls are).
    assert all(c["ok_structure"] and c["judged"] and (c["rel_l2"] == 0.0 or c["rel_l2"] > 5 * limit)
               for c in result["checks"] + result["timed_checks"])
    wrong = [c for c in result["timed_checks"] if c["rel_l2"] > 0]
    print(len(wrong), "of", len(result["timed_checks"]), "timed outputs wrong")
    # Every call within 0.2 s of the one before is answered ended: every loop call after the first at least, so
    # none only if all 8 rounds of 1-3 calls drew one, (1/3)^8.
    assert wrong


def test_puzzle12s_transposed_view_is_named_for_its_layout():
    puzzle = get_puzzle("puzzle12")
    cheat = load_module(puzzle.solution_path("cheats/transposed_view"), "p12_view", WORKLOAD_API)
    keys = torch.randn(64, 32)
    out = cheat.forward(cheat.prepare({}, "cpu"), keys)
    assert torch.equal(out, keys.t())  # the right values
    mine = call_checks.Kept(out).sample(seed=5)
    theirs = call_checks.Kept(keys.t().contiguous()).sample(seed=5)
    assert compare(mine, theirs)["problem"].startswith("output is a strided view (strides (1, 32))")


def test_every_cheat_graded_on_the_gpu_was_refused_for_what_it_tried():
    """One grade each on one H200 (tests/fixtures/cheats_puzzle4_5_6_7_12_2026-11-26.json, `benchmarks/grade_cheats.py`), after
    every call of a round was checked: each refused at correctness, for the class its docstring names."""
    recorded = json.loads((Path(__file__).parent / "fixtures" / "cheats_puzzle4_5_6_7_12_2026-11-26.json").read_text())["grades"]
    words = {"cheats/skips_calls_back_to_back": "timed calls checked",
             "cheats/reads_which_call_is_checked": "timed calls checked",
             "cheats/baseline_on_checked_calls": "timed calls checked",
             "cheats/two_buffers_in_turn": "a later call of the round wrote into the output",
             "cheats/transposed_view": "output is a strided view"}
    assert {g["which"] for g in recorded} == set(words)
    for grade in recorded:
        assert get_puzzle(grade["puzzle"]).solution_path(grade["which"]).is_file()
        [correctness] = [r for r in grade["refused_by"] if r.startswith("correctness:")]
        assert grade["tier"] == "" and words[grade["which"]] in correctness, grade


def errors_too_far(refused: str) -> list[float]:
    """The relative L2 errors a correctness refusal quotes as too far, each checked output's."""
    return [float(e) for e in re.findall(r"relative L2 error ([0-9.e+-]+), too far", refused)]


def test_puzzle4s_cheats_on_its_scene_with_the_memory_were_refused_on_the_h100():
    """Each of puzzle4's cheats graded three times on one H100 (tests/fixtures/cheats_puzzle4_2026-11-27.json), on the
    scene where the memory scored a chain's tokens (before issue 76's redesign, whose grades are owed): the calls
    back to back answered blank are caught among the timed calls; the chain's tables missed every score, the
    checked inputs' as well as the timed calls', by far more than that scene's tolerance (2e-2)."""
    recorded = json.loads((Path(__file__).parent / "fixtures" / "cheats_puzzle4_2026-11-27.json").read_text())
    grades = recorded["grades"]
    puzzle = get_puzzle("puzzle4")
    # Owed its three GPU grades in its present form: the calls that read the round's seeds (issue 76), refused on the
    # CPU by tests/test_every_call_checked.py's test_no_call_finds_a_seed_of_the_calls_after_it (its first grade on
    # the H100, of a form that looked in the warm call alone, in ISSUE76_CHEATS). Owed two of three: the loop's calls
    # batched on its first (issue 76; one grade, no tier, in tests/fixtures/cheats_puzzle4_per_call_loop_*.json).
    owed = {"cheats/finds_the_rounds_seeds", "cheats/batches_the_loops_inputs"}
    assert {g["which"] for g in grades} == {f"cheats/{p.stem}" for p in puzzle.folder.glob("cheats/*.py")} - owed
    assert all(sum(g["which"] == w for g in grades) >= 3 for w in {g["which"] for g in grades})
    for grade in grades:
        [correctness] = [r for r in grade["refused_by"] if r.startswith("correctness:")]
        assert grade["tier"] == "", grade
        if grade["which"] == "cheats/skips_calls_back_to_back":
            assert "timed calls checked" in correctness
        else:
            errors = errors_too_far(correctness)
            assert len(errors) >= 3 and min(errors) > 20 * 2e-2, correctness


ISSUE76_CHEATS = Path(__file__).parent / "fixtures" / "cheats_puzzle4_18_2026-12-07.json"


def test_the_cheats_that_learn_the_future_earned_nothing_on_the_h100():
    """Issue 76's new cheats, each graded once so far on one H100 (ISSUE76_CHEATS; two more grades each owed): a warm
    call that looked for the round's seeds (the cheat's first form) found none and decodes every call itself, slower than the baseline
    (0.88x); the server that teaches itself each request's future at submit gives other tokens than the drawn
    topics make, nearly every request's."""
    recorded = json.loads(ISSUE76_CHEATS.read_text())
    assert "H100" in recorded["card"]
    assert {(g["puzzle"], g["which"]) for g in recorded["grades"]} == {
        ("puzzle4", "cheats/finds_the_rounds_seeds"), ("puzzle18", "cheats/teaches_itself_the_future")}
    for grade in recorded["grades"]:
        assert grade["tier"] == "", grade
        if grade["puzzle"] == "puzzle4":
            assert grade["speedups"]["baseline"] < get_puzzle("puzzle4").tiers[0].min_speedup
        else:
            [correctness] = [r for r in grade["refused_by"] if r.startswith("correctness:")]
            wrong, checked = map(int, re.search(r"(\d+) of (\d+) requests got other tokens", correctness).groups())
            assert wrong > 0.9 * checked, correctness


PER_CALL_LOOP_CHEATS = Path(__file__).parent / "fixtures" / "cheats_puzzle4_per_call_loop_2026-12-07.json"
# The same H100 model again once each call of a round was an ask of its own (its seed sent once the call before
# returned): both of issue 76's puzzle4 cases, the seed finder in its form that looks in every call.
PER_CALL_ASK_CHEATS = Path(__file__).parent / "fixtures" / "cheats_puzzle4_per_call_asks_2026-12-07.json"


def test_puzzle4s_cheats_that_look_ahead_found_nothing_on_the_h100():
    """Graded on one H100 once the CUDA loop made each input after the call before (PER_CALL_LOOP_CHEATS) and once
    each call was an ask of its own (PER_CALL_ASK_CHEATS): with nothing ahead to find, each decodes every call
    itself, at the baseline's speed or under it (0.95x and 1.06x; the seed finder 0.75x, its search its own cost),
    where the batcher read gold at 3.6x when the loop's inputs were made before its first call, and the seed finder
    gold at 24x when the warm call could read the round's seeds."""
    grades = []
    for fixture in (PER_CALL_LOOP_CHEATS, PER_CALL_ASK_CHEATS):
        recorded = json.loads(fixture.read_text())
        assert "H100" in recorded["card"]
        grades += recorded["grades"]
    assert sorted(g["which"] for g in grades) == [*["cheats/batches_the_loops_inputs"] * 2,
                                                  "cheats/finds_the_rounds_seeds"]
    for grade in grades:
        assert grade["puzzle"] == "puzzle4" and grade["tier"] == "", grade
        assert grade["speedups"]["baseline"] < get_puzzle("puzzle4").tiers[0].min_speedup


def graded_three_times_but(grades: list[dict], puzzles: set[str], owed: set) -> set:
    """The (puzzle, cheat) pairs `grades` holds, after checking them against the cheats these puzzles ship: each
    graded three times or more but those still `owed`, and none that ships no longer."""
    graded = [(g["puzzle"], g["which"]) for g in grades]
    shipped = {(p.id, f"cheats/{path.stem}") for p, path in CHEATS if p.id in puzzles}
    assert {c for c in shipped if graded.count(c) >= 3} == shipped - owed
    assert owed <= shipped and set(graded) <= shipped
    return set(graded)


FOUR_GPU_CHEATS = Path(__file__).parent / "fixtures" / "cheats_puzzle1_2_3_9_10_11_15_17_2026-11-27.json"
# The grades the 4-GPU host's time limits left owed, since graded on one H100 over two days (the second day's file
# also holds puzzle21's owed works_ahead).
H100_OWED_CHEATS = [Path(__file__).parent / "fixtures" / name for name in
                    ("cheats_puzzle1_2_3_11_2026-11-27.json", "cheats_puzzle2_3_11_21_2026-11-28.json")]
# puzzle10, 15 and 17's cheats once more on one H100 once missed work was charged beyond the ruler's floor
# (tutor.harness.gpu_clock.after_floor_ms, issue 76): the tails past the clock still counted in full.
FLOOR_CHEATS = Path(__file__).parent / "fixtures" / "cheats_puzzle10_15_17_2026-12-08.json"
# Graded fewer than three times on the two cards together so far (a call's time limit came first): still owed.
CHEATS_OWED: set[tuple[str, str]] = set()
CLASS_WORDS = {"cheats/reads_which_call_is_checked": "timed calls checked",
               "cheats/returns_a_strided_view": "output is a strided view"}


def test_the_single_gpu_cheats_were_refused_or_earned_no_tier_on_the_gpu():
    """puzzle1-3, 9, 10, 11, 15 and 17's cheats graded up to three times each, each grade on one H200 of a 4-GPU host
    (FOUR_GPU_CHEATS, `benchmarks/grade_cheats.py --gpus 4`) or, for some of the grades that host's time limits left
    owed, on one H100 (H100_OWED_CHEATS, `benchmarks/grade_cheats.py`), and puzzle10, 15 and 17's once more on one
    H100 after the charge for missed work moved beyond the ruler's floor (FLOOR_CHEATS): a call that blanks the calls
    it takes for unchecked is refused at correctness, as is an output returned as a strided view; a tail left running
    on a side stream is charged in full, so it reads no faster than the baseline, and its output was not ready when
    the caller read it; the baseline's work run ahead on every input found alive found nothing ahead and reads no
    faster."""
    recorded = json.loads(FOUR_GPU_CHEATS.read_text())
    recorded["grades"] += [g for path in H100_OWED_CHEATS for g in json.loads(path.read_text())["grades"]
                           if g["puzzle"] != "puzzle21"]
    floor = json.loads(FLOOR_CHEATS.read_text())
    assert "H100" in floor["card"]
    recorded["grades"] += floor["grades"]
    graded_three_times_but(recorded["grades"], {"puzzle1", "puzzle2", "puzzle3", "puzzle9", "puzzle10", "puzzle11",
                                                "puzzle15", "puzzle17"}, CHEATS_OWED)
    for grade in recorded["grades"]:
        bronze = get_puzzle(grade["puzzle"]).tiers[0].min_speedup
        refused = " ".join(grade["refused_by"])
        assert grade["tier"] == "", grade
        if grade["which"] in CLASS_WORDS:
            assert "correctness: Output differs" in refused and CLASS_WORDS[grade["which"]] in refused, refused
        else:
            assert grade["speedups"]["baseline"] < bronze, grade
        if grade["which"] == "cheats/runs_a_tail_past_the_clock":
            assert "correctness: Output differs" in refused and "not joined back" in refused, refused
            assert "counted in full" in refused, refused


TWO_GPU_CHEATS = Path(__file__).parent / "fixtures" / "cheats_puzzle8_14_18_2026-11-27.json"
# The grades that host's time limits left owed, graded the next day on one H200 (and puzzle18's last two on the two
# GPUs of one host, one grade per GPU): every cheat now has its three.
TWO_GPU_OWED_CHEATS = Path(__file__).parent / "fixtures" / "cheats_puzzle14_18_2026-11-28.json"
# Owed two of its three GPU grades: the server that teaches itself each request's future at submit (issue 76), refused
# on the CPU by tests/test_puzzle18.py's test_a_server_that_teaches_itself_the_future_at_submit_is_refused, its first
# grade on the H100 in ISSUE76_CHEATS. The other cheats' grades here were made before each token's topic was drawn.
CHEATS_OWED_TWO_GPU: set[tuple[str, str]] = {("puzzle18", "cheats/teaches_itself_the_future")}


def test_the_redesigned_scenes_cheats_were_refused_on_the_gpu():
    """puzzle8, 14 and 18's cheats graded three times each on one H200 (TWO_GPU_CHEATS, TWO_GPU_OWED_CHEATS): a call
    that blanks the calls it takes for unchecked is refused at correctness; a table of the ring or of the curves
    misses every checked output by far more than the tolerance; a server that sends no logit, or logits of a model
    that skipped attention, is refused at correctness however right its tokens."""
    recorded = json.loads(TWO_GPU_CHEATS.read_text())
    recorded["grades"] += json.loads(TWO_GPU_OWED_CHEATS.read_text())["grades"]
    graded = graded_three_times_but(recorded["grades"], {"puzzle8", "puzzle14", "puzzle18"}, CHEATS_OWED_TWO_GPU)
    assert graded == {(p.id, f"cheats/{path.stem}") for p, path in CHEATS
                      if p.id in {"puzzle8", "puzzle14", "puzzle18"}} - CHEATS_OWED_TWO_GPU  # the rest once at least
    for grade in recorded["grades"]:
        puzzle, refused = get_puzzle(grade["puzzle"], drafts=True), " ".join(grade["refused_by"])
        assert grade["tier"] == "" and refused.startswith("correctness: "), grade
        if grade["which"] == "cheats/reads_which_call_is_checked":
            assert "timed calls checked" in refused, refused
        elif grade["puzzle"] == "puzzle18":
            assert "without their logit" in refused or "the logits do not" in refused, refused
        else:
            # puzzle8's grades are of its scene before issue 76's redesign (owed on the new one), at that scene's limit.
            limit = 5e-3 if grade["puzzle"] == "puzzle8" else puzzle.correctness.max_rel_l2
            errors = errors_too_far(refused)
            assert len(errors) >= 3 and min(errors) > 10 * limit, refused


# The new puzzles' cheats on one H100, over several device calls (`benchmarks/grade_cheats.py`), each fixture with the
# puzzles it grades (puzzle21's works_ahead had its third grade with the owed ones, H100_OWED_CHEATS).
H100_CHEATS = {"cheats_puzzle14_puzzle20_2026-11-27.json": {"puzzle14", "puzzle20"},
               "cheats_puzzle21_2026-11-27.json": {"puzzle21"},
               "cheats_puzzle22_2026-11-28.json": {"puzzle22"}}
# Owed its three GPU grades (issue 76): the kernel registered for the harness's L2 flush, named by the harness's
# check on the CPU (tests/test_works_inside_the_harness.py).
FLUSH_KERNEL = "cheats/works_inside_the_harness"
# Where a call that blanks the calls it takes for unchecked still writes every output, the physical floor has no
# reason to refuse it: puzzle22's writes 0.69 ms of logits a call against a floor of 0.12 ms.
FLOOR_SPARES_THE_BLANKS = {"puzzle22"}


@pytest.mark.parametrize("fixture", sorted(H100_CHEATS))
def test_the_new_puzzles_cheats_were_refused_on_the_h100(fixture):
    """Each of their cheats graded three times on one H100: a call that blanks the calls it takes for unchecked is
    refused at correctness, and under the physical floor where it skips the writes too; a table of the curves misses
    every checked output by far more than the tolerance; the work done ahead on the inputs found alive is right but
    reads far slower than the baseline."""
    puzzles = H100_CHEATS[fixture]
    grades = json.loads((Path(__file__).parent / "fixtures" / fixture).read_text())["grades"]
    grades += [g for path in H100_OWED_CHEATS for g in json.loads(path.read_text())["grades"] if g["puzzle"] in puzzles]
    graded_three_times_but(grades, puzzles, {(p, FLUSH_KERNEL) for p in puzzles & {"puzzle20", "puzzle22"}})
    for grade in grades:
        puzzle, refused = get_puzzle(grade["puzzle"]), " ".join(grade["refused_by"])
        assert grade["tier"] == "", grade
        if grade["which"] == "cheats/reads_which_call_is_checked":
            assert refused.startswith("correctness: Output differs") and "timed calls checked" in refused, refused
            floor = "physical floor: Faster than this GPU can do the work" in refused
            assert floor != (grade["puzzle"] in FLOOR_SPARES_THE_BLANKS), refused
        elif grade["which"] == "cheats/tabulates_the_curves":
            errors = errors_too_far(refused)
            assert len(errors) >= 3 and min(errors) > 10 * puzzle.correctness.max_rel_l2, refused
        else:
            assert refused.startswith("performance: Not yet") and "correctness" not in refused, refused
            assert grade["speedups"]["baseline"] < 1.0, grade


# The multi-GPU puzzles at a CPU's sizes (the same split, two gloo ranks): the spec's sizes line, and its stand-in.
SMALL_SIZES = {"puzzle13": ("BATCH, HIDDEN, FFN = 256, 4096, 8192", "BATCH, HIDDEN, FFN = 32, 128, 256"),
               "puzzle16": ("TOKENS, HIDDEN = 1024, 4096", "TOKENS, HIDDEN = 32, 128"),
               "puzzle19": ("LAYERS, TOKENS, HIDDEN, FFN = 2, 16, 4096, 14336", "LAYERS, TOKENS, HIDDEN, FFN = 2, 16, 128, 256")}
# What each multi-GPU cheat must get on the CPU: refused at correctness, or right there (the memory rule that
# refuses it reads the GPU's allocator: tests/fixtures of its H100 grades).
RANK_CHEATS = {("puzzle13", "gathers_the_other_half"): "right", ("puzzle13", "sums_on_rank_0_only"): "wrong",
               ("puzzle16", "one_rank_runs_both_stages"): "right", ("puzzle16", "keeps_the_output_on_rank_1"): "wrong",
               ("puzzle19", "gathers_the_other_half"): "right", ("puzzle19", "rank_0_alone"): "wrong"}


@pytest.mark.parametrize("puzzle_id, name", sorted(RANK_CHEATS), ids=[f"{p}/{n}" for p, n in sorted(RANK_CHEATS)])
def test_each_multi_gpu_cheat_is_refused_at_correctness_or_does_the_work_right_on_two_cpu_ranks(puzzle_id, name,
                                                                                                 tmp_path):
    """Graded as the GPUs grade it, on two gloo ranks at a CPU's sizes: each rank given its shard alone, and
    every rank's output checked. A cheat that leaves a rank's output wrong fails every check; one that gathers
    the other rank's weights is right, to the bit where the puzzle asks it (its memory is what refuses it)."""
    puzzle = get_puzzle(puzzle_id)
    assert {n for p, n in RANK_CHEATS if p == puzzle_id} == {p.stem for p in puzzle.folder.glob("cheats/*.py")}
    line, small = SMALL_SIZES[puzzle_id]
    spec = resized_copies(puzzle, ["spec.py"], {line: small}, tmp_path)["spec.py"]
    request = {"mode": "check", "device": "cpu", "seed": 11, "spec": str(spec), "ranks": 2,
               "workloads": {"baseline": str(puzzle.workload_path("baseline")),
                             "mine": str(puzzle.solution_path(f"cheats/{name}"))},
               "prepare": ["baseline", "mine"], "time": ["baseline", "mine"], "candidate": "mine",
               "oracle": "baseline", "correctness": {"checks": 2}, "timing": {"warmup": 1, "rounds": 2}}
    result = run_harness(request, tmp_path / "run", 300).result
    checks = result["checks"] + result["timed_checks"]
    errors = [c.get("rel_l2", float("inf")) for c in checks]
    print(name, errors)
    if RANK_CHEATS[puzzle_id, name] == "wrong":
        assert min(errors) > 20 * max(puzzle.correctness.max_rel_l2, 1e-3)
    else:
        assert max(errors) <= puzzle.correctness.max_rel_l2 and not result["violations"]


def test_the_multi_gpu_cheats_were_refused_on_two_gpus_for_what_they_tried():
    """Each of puzzle13, 16 and 19's cheats graded three times on 2 x H200, in two leases
    (tests/fixtures/cheats_ranks_puzzle13_16_19_2026-11-27.json, `benchmarks/grade_cheats.py`): a rank that gathered the
    other's weights refused at fair play for what it kept, one whose output went unread refused at correctness;
    none earned a tier."""
    recorded = json.loads((Path(__file__).parent / "fixtures" / "cheats_ranks_puzzle13_16_19_2026-11-27.json").read_text())
    grades = recorded["grades"]
    graded = [(g["puzzle"], g["which"].removeprefix("cheats/")) for g in grades]
    assert set(graded) == set(RANK_CHEATS) and all(graded.count(c) >= 3 for c in RANK_CHEATS)
    for grade in grades:
        refused = " ".join(grade["refused_by"])
        assert grade["tier"] == "", grade
        if RANK_CHEATS[grade["puzzle"], grade["which"].removeprefix("cheats/")] == "right":
            assert "fair play" in refused and "more than its shard of the weights" in refused, refused
        else:
            assert "correctness: Output differs" in refused, refused


def test_puzzle2s_cheats_answer_right_where_they_answer_at_all():
    """puzzle2's cheats on the CPU (its eager stack on small layers): the values the baseline's stack gives, so a
    grade refuses them for what they try, the layout of one (a strided view) and the blanks of the other."""
    puzzle = get_puzzle("puzzle2")
    baseline = load_module(puzzle.workload_path("baseline"), "p2_baseline", WORKLOAD_API)
    g = torch.Generator().manual_seed(3)
    layers = [(torch.randn(64, 32, generator=g) / 6, torch.randn(32, 64, generator=g) / 8) for _ in range(2)]
    xs = [torch.randn(n, 32, generator=g) for n in (1, 3, 5)]
    expected = torch.cat([baseline.block_stack(x, layers) for x in xs])
    view = load_module(puzzle.solution_path("cheats/returns_a_strided_view"), "p2_view", WORKLOAD_API)
    out = view.forward(view.prepare({"layers": layers}, "cpu"), xs)
    assert torch.allclose(out, expected, atol=1e-5) and not out.is_contiguous()
    mine, theirs = call_checks.Kept(out).sample(seed=5), call_checks.Kept(expected).sample(seed=5)
    assert compare(mine, theirs)["problem"].startswith("output is a strided view (strides (1, 9))")
    frames = load_module(puzzle.solution_path("cheats/reads_which_call_is_checked"), "p2_frames", WORKLOAD_API)
    assert torch.allclose(frames.forward(frames.prepare({"layers": layers}, "cpu"), xs), expected, atol=1e-5)
