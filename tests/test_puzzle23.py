"""puzzle23, Inside the budget, behind the schedule (issue 38's memory_fragmentation), as far as the CPU can
check it: every style's decode states match float64's within the tolerance at a CPU's sizes, and prompts cut short
miss by far more; the baseline hands the allocator's cache back after every prompt and the reference never does;
the harness serves the scene end to end (the reference right on every call); every call holds the floor's tokens. The
memory budget's figure and judge are tests/test_allocator_peak.py's; the grades an H200 and an H100 gave, kept as
fixtures, read the tiers puzzle.toml sets (MEASUREMENTS.md).
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import torch

from conftest import assert_each_cheat_refused, graded_counts, harness_check, puzzle_file, relative_l2, resized_copies
from test_grading_rules import assert_clear_of_every_bar
from tutor.catalog import all_puzzles, get_puzzle
from tutor.study import recorded_profilers

pytestmark = pytest.mark.bf16_products_exact  # its scene's bf16 products, sooner (tests/conftest.py)

PUZZLE = get_puzzle("puzzle23", drafts=True)
# The scene at a CPU's sizes: the same layers, heads and prompts, narrower and shorter (chunks of 32 tokens).
SMALL = {"HIDDEN": 256, "FFN": 512, "HEAD": 8, "KV": 64, "SHORTEST": 16, "LONGEST": 200, "CHUNK": 32}
STYLES = ["baseline.py", "solution/workload.py", "alternatives/chunked_prefill.py", "alternatives/static_buffers.py",
          "cheats/over_the_budget.py", "cheats/rounded_blocks.py", "cheats/resets_the_peak.py"]


FIXTURES = Path(__file__).parent / "fixtures"
PUZZLE_SPEC_SLACK = puzzle_file(PUZZLE, "spec.py").MEMORY_SLACK


def test_the_puzzle_ships_with_its_recordings():
    assert not PUZZLE.draft and "puzzle23" in all_puzzles()
    assert set(recorded_profilers(PUZZLE)) == {"torch", "memory"}


def test_an_h100s_and_an_h200s_grades_read_their_tiers_with_every_bar_4_percent_higher_or_lower():
    """On H100s (`benchmarks/device_grading.sh stability:puzzle23:N alt:puzzle23:N:STYLE ...`, four device calls)
    whose baseline read 18.6-26.5 ms a call (its speed-ups are least where it is fastest), and on one H200
    (`benchmarks/measure_draft.py puzzle23 ...`, three device calls): the reference and static buffers gold, chunked
    prefill silver, the baseline against itself none, each with every bar 4% either way (gold sits between chunked
    prefill's lower bounds, 1.19-1.27 over five grades, and the allocator fixes' 1.39 and up). (The first chunked
    prefill, chunks of 2048 tokens and the last one short, read 1.07-1.33 on the H200: its grades left the fixture
    with that file; MEASUREMENTS.md keeps them.)"""
    h100 = json.loads((FIXTURES / "grades_puzzle23_2026-12-06.json").read_text())
    h200 = json.loads((FIXTURES / "grades_puzzle23_2026-11-28.json").read_text())
    assert {g["card"] for g in h100} == {"NVIDIA H100 80GB HBM3"} and {g["card"] for g in h200} == {"NVIDIA H200"}
    assert graded_counts(h100) == {"reference": 3, "alternatives/chunked_prefill": 5,
                                   "alternatives/rounded_blocks": 1, "alternatives/static_buffers": 2}
    assert graded_counts(h200) == {"baseline": 3, "reference": 3, "alternatives/rounded_blocks": 5,
                                   "alternatives/static_buffers": 5}
    # rounded_blocks, graded then as an alternative, is a cheat now: over the budget (the test below).
    honest = [g for g in h100 + h200 if g["which"] != "alternatives/rounded_blocks"]
    assert_clear_of_every_bar(honest, margin=0.04)


def test_the_3_percent_budget_refused_every_cheat_twice_on_an_h100():
    """`benchmarks/grade_cheats.py puzzle23 --runs 2` on one H100 with spec.MEMORY_SLACK at 3%: the baseline without
    empty_cache() held 1.06-1.08x the baseline's workload, rounded blocks 1.08-1.22x, both refused by the budget; the
    one that resets the allocator's peak by fair play and the budget; the one that blanks the calls it takes for
    unchecked at correctness and by the floor. (The H200's grades at 10% refused the first in one of four: the
    slack then, MEASUREMENTS.md.)"""
    refusals = {"cheats/over_the_budget": {"memory budget"}, "cheats/rounded_blocks": {"memory budget"},
                "cheats/resets_the_peak": {"fair play", "memory budget"},
                "cheats/reads_which_call_is_checked": {"correctness", "physical floor"}}
    assert_each_cheat_refused(PUZZLE, FIXTURES / "cheats_puzzle23_2026-12-06.json", refusals, times=2)
    assert PUZZLE_SPEC_SLACK == 0.03


def test_every_honest_grade_on_record_held_inside_the_3_percent_budget():
    """What each honest style's workload held against the baseline's in the grades that printed it (MEASUREMENTS.md):
    the reference 0.98-0.99x, static buffers 0.85x, chunked prefill 0.68x: inside 1.03 by 4% and more, where the
    cheats held 1.06x and more."""
    honest = {"reference": [1006 / 1018, 1026 / 1044], "alternatives/static_buffers": [860 / 1016],
              "alternatives/chunked_prefill": [702 / 1038]}
    assert max(r for rs in honest.values() for r in rs) <= (1 + PUZZLE_SPEC_SLACK) / 1.04
    cheats = json.loads((FIXTURES / "cheats_puzzle23_2026-12-06.json").read_text())["grades"]
    held = [float(line.split("x the baseline's")[0].rsplit(", ", 1)[1]) for g in cheats for line in g["refused_by"]
            if line.startswith("memory budget")]
    assert len(held) == 6 and min(held) >= 1 + PUZZLE_SPEC_SLACK + 0.02, held


@pytest.fixture(scope="module")
def scene():
    """The small scene's weights, one call's prompts, and its decode states in float64 (the baseline's code)."""
    spec = puzzle_file(PUZZLE, "spec.py", SMALL)
    weights, prompts = spec.make_weights(0, "cpu"), spec.make_input(3, "cpu")
    baseline = puzzle_file(PUZZLE, "baseline.py", SMALL)
    exact = baseline.forward({"w": {k: v.double() for k, v in weights.items()}, "cuda": False},
                             [p.double() for p in prompts])
    return weights, prompts, exact


@pytest.mark.parametrize("workload", STYLES)
def test_every_style_returns_the_decode_states_within_the_tolerance(scene, workload):
    weights, prompts, exact = scene
    module = puzzle_file(PUZZLE, workload, SMALL)
    out = module.forward(module.prepare(weights, "cpu"), prompts)
    assert out.shape == (len(prompts), SMALL["HIDDEN"]) and out.dtype == torch.float32
    rel = relative_l2(out.double(), exact)
    print(workload, f"relative L2 {rel:.2e}")
    assert rel < PUZZLE.correctness.max_rel_l2 / 2


def test_less_work_misses_by_far_more_than_the_tolerance(scene):
    """What a workload that skipped part of the prefill would return: each prompt cut to its last 64 tokens."""
    weights, prompts, exact = scene
    module = puzzle_file(PUZZLE, "baseline.py", SMALL)
    out = module.forward(module.prepare(weights, "cpu"), [p[-64:] for p in prompts])
    assert relative_l2(out.double(), exact) > 5 * PUZZLE.correctness.max_rel_l2


def test_the_baseline_hands_the_cache_back_after_every_prompt_and_the_reference_never(monkeypatch, scene):
    weights, prompts, _ = scene
    emptied = []
    monkeypatch.setattr(torch.cuda, "empty_cache", lambda: emptied.append(1))
    settings = []
    monkeypatch.setattr(torch.cuda.memory, "_set_allocator_settings", settings.append)
    for workload, device_calls in (("baseline.py", len(prompts)), ("solution/workload.py", 0)):
        emptied.clear()
        module = puzzle_file(PUZZLE, workload, SMALL)
        module.forward(module.prepare(weights, "cuda"), prompts)  # CPU tensors: only the allocator calls are CUDA's
        assert len(emptied) == device_calls, workload
    assert settings == ["expandable_segments:True"]


def test_the_static_buffers_are_made_once_for_the_longest_prompt_and_kept(scene):
    """alternatives/static_buffers: its buffers, sized by the first call's longest prompt, serve shorter prompts
    without a new allocation, and the outputs stay right when they are reused."""
    weights, prompts, exact = scene
    module = puzzle_file(PUZZLE, "alternatives/static_buffers.py", SMALL)
    state = module.prepare(weights, "cpu")
    module.forward(state, prompts)
    made = {name: t.data_ptr() for name, t in state["space"].items() if name != "rows"}
    again = module.forward(state, prompts)
    module.forward(state, [p[: len(p) // 2] for p in prompts])
    assert {name: t.data_ptr() for name, t in state["space"].items() if name != "rows"} == made
    assert state["space"]["rows"] == module.ROWS and relative_l2(again.double(), exact) < 2.5e-2


def test_the_harness_serves_the_scene_and_checks_every_call(tmp_path):
    """Graded as the GPU grades it, at a CPU's sizes: the reference right on every check and every timed call. (That
    a blanked call is found is every puzzle's: tests/test_every_call_checked.py.)"""
    # Small enough for a CPU without bf16 arithmetic (AVX2: bf16 matmuls several times slower than fp32's, more at
    # these small shapes), where a call of 864 tokens at HIDDEN 256 took 1.5 s: 320 tokens at 128.
    small = {"HIDDEN, FFN, LAYERS = 2048, 8192, 2": "HIDDEN, FFN, LAYERS = 128, 128, 2",
             "SHORTEST, LONGEST = 128, 4096": "SHORTEST, LONGEST = 8, 72",
             "HIDDEN, FFN, LAYERS, HEADS, KV_HEADS = 2048, 8192, 2, 32, 8":
             "HIDDEN, FFN, LAYERS, HEADS, KV_HEADS = 128, 128, 2, 32, 8"}
    paths = resized_copies(PUZZLE, ["spec.py", "baseline.py", "solution/workload.py"], small, tmp_path)
    assert not [name for name, path in paths.items() if "2048" in path.read_text()]  # every size line found
    result = harness_check(PUZZLE, paths["solution/workload.py"], tmp_path, baseline=paths["baseline.py"],
                           spec=paths["spec.py"])
    errors = [c.get("rel_l2", float("inf")) for c in result["checks"] + result["timed_checks"]]
    assert len(result["timed_checks"]) >= 4 and max(errors) <= PUZZLE.correctness.max_rel_l2, errors
    assert not result["violations"]


def test_every_call_holds_the_floors_tokens_in_prompts_of_every_length():
    spec = puzzle_file(PUZZLE, "spec.py")
    calls = [[p.shape[0] for p in spec.make_input(seed, "cpu")] for seed in range(2)]
    calls += [spec._lengths(torch.Generator().manual_seed(seed)) for seed in range(1000, 1200)]
    assert {sum(c) for c in calls} == {spec.TOKENS} and spec.TOKENS == 16896
    lengths = [n for c in calls for n in c]
    assert min(lengths) >= spec.SHORTEST and max(lengths) <= spec.LONGEST
    assert len(set(lengths)) > 0.75 * len(lengths)  # sizes of every kind (3969 to draw from), not a few repeated
    assert len({tuple(c) for c in calls}) == len(calls)
    work = spec.least_work(50 * 2**20)
    assert work["flops"] == 2 * spec.TOKENS * 2 * (2048 * (2048 + 1024 + 2048 + 16384) + 8192 * 2048)


@pytest.mark.gpu
@pytest.mark.parametrize("workload", STYLES[1:])
def test_every_style_matches_the_baseline_on_the_gpu_at_the_scenes_sizes(workload):
    """The tolerance, set from the CPU's small scene, against what the GPU's bf16 kernels make of the real one."""
    spec = puzzle_file(PUZZLE, "spec.py")
    weights, prompts = spec.make_weights(1, "cuda"), spec.make_input(2, "cuda")
    baseline = puzzle_file(PUZZLE, "baseline.py")
    expected = baseline.forward(baseline.prepare(weights, "cuda"), prompts)
    module = puzzle_file(PUZZLE, workload)
    rel = relative_l2(module.forward(module.prepare(weights, "cuda"), prompts).double().cpu(),
                      expected.double().cpu())
    print(workload, f"relative L2 against the baseline {rel:.2e}", [p.shape[0] for p in prompts])
    assert rel < PUZZLE.correctness.max_rel_l2 / 2


def test_its_sweep_runs_every_workload_on_the_same_prompts():
    """sweeps/allocator_styles.py, the measurement owed on the H100, run in-process at a CPU's sizes: every workload
    it lists exists and makes the baseline's decode states (the same arithmetic, on the CPU to the bit; static
    buffers add each residual inside its matmul, and chunked prefill pads its last chunk, so each rounds otherwise:
    their accuracy is the tolerance test's)."""
    sweep = puzzle_file(PUZZLE, "sweeps/allocator_styles.py")
    sizes = {"HIDDEN": 256, "FFN": 512, "PROMPTS": 2, "SHORTEST": 16, "LONGEST": 64}
    sums = {w: sweep.measure(w, 1, sizes, "cpu")["checksum"] for w in sweep.WORKLOADS}
    assert set(sums) >= set(STYLES[:6]), sums
    rounded_otherwise = {"alternatives/static_buffers.py", "alternatives/chunked_prefill.py"}
    assert len({total for w, total in sums.items() if w not in rounded_otherwise}) == 1, sums
