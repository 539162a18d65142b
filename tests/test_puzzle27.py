"""puzzle27, The whole model (issue 38's capstone), as far as the CPU can check it: a Llama-shaped decoder
at a small model's sizes, whose every honest style chooses the model's best tokens along its own path (judged by
the spec in the oracle's process), whose cheats choose tokens the model scores far lower, and whose grade names
three stages in order; the harness judges every call. One H200's recordings show each stage where its fix before
it leaves it; its grades and an H100's read the tiers puzzle.toml sets, every one against the prototype."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
import torch

from conftest import assert_each_cheat_refused, graded_counts, harness_check, puzzle_file, resized_copies
from test_grading_rules import assert_clear_of_every_bar
from tutor.catalog import all_puzzles, get_puzzle
from tutor.grading.answer import read_answer

PUZZLE = get_puzzle("puzzle27")
FIXTURES = Path(__file__).parent / "fixtures"
# A small model whose layers weigh in the residual stream what the real one's do: the weights' std scaled so that
# std x sqrt(HIDDEN) stays 0.9 (each layer's output as large as its input, not a fiftieth of it).
SMALL = {"LAYERS": 4, "HIDDEN": 64, "HEADS": 4, "KV_HEADS": 2, "HEAD_DIM": 16, "FFN": 256, "VOCAB": 512,
         "BATCH": 2, "PROMPT": 32, "INIT_STD": 0.113}
HONEST = ["baseline.py", "solution/workload.py", "alternatives/gpu_argmax.py", "prototype.py",
          "alternatives/graphed_fp32_head.py", "alternatives/compiled_step.py"]
SIZE_LINES = {"LAYERS, HIDDEN, HEADS, KV_HEADS, HEAD_DIM, FFN, VOCAB = 16, 2048, 32, 8, 64, 8192, 128256":
              "LAYERS, HIDDEN, HEADS, KV_HEADS, HEAD_DIM, FFN, VOCAB = 4, 64, 4, 2, 16, 256, 512",
              "BATCH, PROMPT, STEPS = 8, 2048, 16": "BATCH, PROMPT, STEPS = 2, 32, 16",
              "ROPE_THETA, NORM_EPS, INIT_STD = 500000.0, 1e-5, 0.02": "ROPE_THETA, NORM_EPS, INIT_STD = 500000.0, 1e-5, 0.113"}


def test_the_capstone_ships_with_three_stages_and_a_judged_output():
    assert not PUZZLE.draft and "puzzle27" in all_puzzles() and PUZZLE.correctness.judged
    assert [PUZZLE.diagnosis.accepted, *(s.diagnosis.accepted for s in PUZZLE.stages)] == [
        ("launch_overhead",), ("host_sync",), ("global_memory_traffic",)]
    assert [s.tier for s in PUZZLE.stages] == ["silver", "gold"]


def test_the_reference_answer_names_each_stage_in_order():
    answer = read_answer(PUZZLE.solution_dir / "answer.toml")
    assert [answer.bottleneck, *(s.bottleneck for s in answer.stages)] == [
        "launch_overhead", "host_sync", "global_memory_traffic"]
    assert all(len(s.evidence) >= stage.diagnosis.min_evidence for s, stage in zip(answer.stages, PUZZLE.stages))


def test_each_stage_shows_in_the_recording_of_the_fix_before_it_and_not_before():
    """One H200's profiles (measure_draft.py puzzle27 OUT --recordings-only): the baseline's, the prototype's
    (a graph a step, the host's pick left) and graphed_fp32_head's (the host's wait gone too). Each stage's `shows`
    conditions hold on the recording of the fix before it, and not on the one before that: the host's wait shows
    once the launches are one graph (the GPU busy 66% of the call, 16% before), the output layer's bytes once the
    host no longer waits (busy 90%)."""
    from tutor.grading.stages import unmet

    recorded = [json.loads((PUZZLE.folder / "recordings" / name).read_text())["values"]
                for name in ("baseline_metrics.json", "stage2_metrics.json", "stage3_metrics.json")]
    for number, stage in enumerate(PUZZLE.stages, start=2):
        assert unmet(stage.shows, recorded[number - 1]) == [], stage.name
        assert unmet(stage.shows, recorded[number - 2]), stage.name
    assert recorded[0]["gpu.busy_fraction"] < 0.2 < 0.6 < recorded[1]["gpu.busy_fraction"] < 0.8


def test_every_tier_is_measured_against_the_prototype_which_is_also_the_oracle():
    """The prototype's time moves under 1% from grade to grade, the baseline's with the host (325-540 ms a call);
    and every call of a grade is judged by the oracle's process, which runs the oracle on the call's input: the
    baseline there made a warm grade's timing 53 s on an H100, the prototype 13 s."""
    assert {t.vs for t in PUZZLE.tiers} == {"prototype"} and PUZZLE.correctness.oracle == "prototype"


def test_its_grades_on_one_h200_and_one_h100_read_their_tiers_with_every_bar_8_percent_higher_or_lower():
    """Each style graded five times on one H200 against the prototype (`benchmarks/grade_stability.py puzzle27 --runs 1
    --which W`, then `benchmarks/device_grading.sh alt:puzzle27:1:W`): the host's wait gone too 1.27-1.45x silver,
    the reference 1.80-2.13x and compiled_step 3.01-3.12x gold, the GPU's pick with the launches left 0.21-0.30x
    none. On one H100 (`benchmarks/device_grading.sh stability:puzzle27:2 alt:puzzle27:1:W ...`, the prototype the
    oracle): 1.20x, 1.71x, 2.72x and 0.37x. The prototype still waits on the host each step: 72.6-75.5 ms a call on
    the H200, and 83.5 and 86.3 ms in the two grades whose baseline read slowest (504 and 507 ms), which lifted the
    ratios against it by 13-18%; 76.6-79.0 ms on the H100. Every lower bound stays 8% clear of every bar."""
    h200 = json.loads((FIXTURES / "grades_puzzle27_2026-11-29.json").read_text())
    h100 = json.loads((FIXTURES / "grades_puzzle27_2026-12-06.json").read_text())
    assert graded_counts(h200) == {"reference": 5, "alternatives/gpu_argmax": 5, "alternatives/graphed_fp32_head": 5,
                                   "alternatives/compiled_step": 5}
    assert graded_counts(h100) == {"reference": 2, "alternatives/gpu_argmax": 1, "alternatives/graphed_fp32_head": 1,
                                   "alternatives/compiled_step": 1}
    assert {g["card"] for g in h100} == {"NVIDIA H100 80GB HBM3"}
    assert_clear_of_every_bar(h200 + h100, margin=0.08)


def test_against_the_baseline_the_tiers_would_change_with_the_machine():
    """The 16 earlier grades, every tier then measured against the baseline: launch-bound Python whose time the host
    sets (263-540 ms a call from grade to grade), while each graphed style's held within 1%. The prototype and
    graphed_fp32_head, one stage apart, overlap there (6.42x against 5.83x): the reason every tier is measured
    against the prototype."""
    grades = json.loads((FIXTURES / "puzzle27_grades_vs_baseline_2026-11-29.json").read_text())
    assert graded_counts(grades) == {"reference": 5, "prototype": 4, "alternatives/graphed_fp32_head": 4,
                                     "alternatives/compiled_step": 2, "alternatives/gpu_argmax": 1}

    def read(w: str, figure: str) -> list[float]:
        return [g["speedups"]["call"]["baseline"][figure] for g in grades if g["which"] == w]

    assert max(read("prototype", "median")) > min(read("alternatives/graphed_fp32_head", "median"))


def test_each_cheat_graded_on_one_h200_and_one_h100_is_refused():
    """`benchmarks/grade_cheats.py puzzle27 --runs 1` on one H200, five times, the baseline the oracle then: the decode
    of half the layers judged 0.32-0.35 against the tolerance of 1e-2 (and short of bronze, 1.78-2.60x the baseline);
    the workload that blanks the calls it takes for unchecked judged wrong on 98-101 of 122-125 timed calls, and its
    GPU time under the floor by 87x and more. Once on one H100 with the prototype the oracle: the same refusals,
    judged 0.33-0.35 and wrong on 99 of 123 timed calls, under the floor by 250x."""
    refusals = {"cheats/half_the_layers": {"correctness", "performance"},
                "cheats/reads_which_call_is_checked": {"correctness", "physical floor"}}
    assert_each_cheat_refused(PUZZLE, FIXTURES / "cheats_puzzle27_2026-11-29.json", refusals, times=5)
    # Half the layers, graphed, reads 0.79x the prototype: over bronze's bar, and refused at correctness alone.
    refusals["cheats/half_the_layers"] = {"correctness"}
    assert_each_cheat_refused(PUZZLE, FIXTURES / "cheats_puzzle27_2026-12-06.json", refusals, times=1)


def judged_errors(styles: list[str], seed: int = 1) -> dict[str, float]:
    """Each style's tokens judged by the spec's model along their own path: the relative L2 between each choice's
    logit and the best of its step."""
    spec = puzzle_file(PUZZLE, "spec.py", SMALL)
    weights, inputs = spec.make_weights(0, "cpu"), spec.make_input(seed, "cpu")
    errors = {}
    for style in styles:
        module = puzzle_file(PUZZLE, style)
        tokens = module.forward(module.prepare(weights, "cpu"), inputs)
        assert tokens.shape == (SMALL["BATCH"], spec.STEPS) and tokens.dtype == torch.long
        scored, best = spec.judge(weights, inputs, tokens)
        errors[style] = float((scored - best).norm() / best.norm())
    return errors


def test_every_honest_style_chooses_the_models_best_tokens_along_its_own_path():
    errors = judged_errors(HONEST)
    print(errors)
    assert max(errors.values()) < PUZZLE.correctness.max_rel_l2 / 4, errors


def test_a_decode_that_skips_half_the_layers_chooses_tokens_the_model_scores_far_lower():
    errors = judged_errors(["cheats/half_the_layers.py"])
    print(errors)
    assert errors["cheats/half_the_layers.py"] > 10 * PUZZLE.correctness.max_rel_l2


def test_the_model_does_not_repeat_its_token_the_way_an_embedding_alone_would():
    """A random model whose layers weigh little picks the token it was fed (the tied embedding's self-similarity):
    a table would answer it. At these weights the layers decide: few repeats, many distinct tokens (over 64 steps:
    a call's 16 are too few to tell)."""
    spec = puzzle_file(PUZZLE, "spec.py", SMALL)
    module = puzzle_file(PUZZLE, "solution/workload.py")
    module.STEPS = 64
    tokens = module.forward(module.prepare(spec.make_weights(0, "cpu"), "cpu"), spec.make_input(2, "cpu"))
    assert (tokens[:, 1:] == tokens[:, :-1]).float().mean() < 0.2 and tokens.unique().numel() > 40


def small_spec(tmp_path: Path) -> Path:
    return resized_copies(PUZZLE, ["spec.py"], SIZE_LINES, tmp_path)["spec.py"]


def test_the_harness_judges_every_call_of_the_reference_and_of_the_blanker(tmp_path):
    """Graded as the GPU grades it, at a CPU's sizes: the reference right on every check and every timed call; the
    workload that returns zeros on the calls it takes for unchecked judged wrong on those."""
    spec = small_spec(tmp_path)
    honest = harness_check(PUZZLE, "solution/workload.py", tmp_path, spec=spec, judged=True)
    every = honest["checks"] + honest["timed_checks"]
    assert every and all(c["judged"] and c["rel_l2"] < PUZZLE.correctness.max_rel_l2 for c in every), every
    blanker = harness_check(PUZZLE, "cheats/reads_which_call_is_checked.py", tmp_path, spec=spec, judged=True)
    assert all(c["rel_l2"] < PUZZLE.correctness.max_rel_l2 for c in blanker["checks"])
    assert any(c["rel_l2"] > 0.5 for c in blanker["timed_checks"]), blanker["timed_checks"]


@pytest.mark.gpu
def test_gpu_every_style_judged_at_the_scenes_sizes():
    """On CUDA at the real shapes (2.5 GB of weights, a 537 MB cache): each honest style's judged error, and the
    cheat's; printed for MEASUREMENTS.md, the tolerance set from them."""
    if not torch.cuda.is_available():
        pytest.skip("needs CUDA")
    spec = puzzle_file(PUZZLE, "spec.py")
    weights, inputs = spec.make_weights(0, "cuda"), spec.make_input(1, "cuda")
    errors = {}
    for style in [*HONEST, "cheats/half_the_layers.py"]:
        module = puzzle_file(PUZZLE, style)
        tokens = module.forward(module.prepare(weights, "cuda"), inputs)
        scored, best = spec.judge(weights, inputs, tokens)
        errors[style] = float((scored - best).norm() / best.norm())
    print("judged errors at the scene's sizes:", errors)
    assert max(errors[s] for s in HONEST) < PUZZLE.correctness.max_rel_l2 < errors["cheats/half_the_layers.py"]


def test_show_says_how_a_capstone_is_graded_its_choices_judged_and_its_stages_in_turn():
    from tutor.brief import grading_markdown

    text = grading_markdown(PUZZLE)
    assert "judged by the model along your own path" in text and "on every timed call" in text
    assert "stage 2 unlocks silver; stage 3 unlocks gold" in text and "--which mine" in text
    plain = grading_markdown(get_puzzle("puzzle5"))
    assert "Stages" not in plain and "along your own path" not in plain


def run_sweep(script: str, tmp_path: Path, *args: str):
    """One of the puzzle's sweeps/ scripts run as its command line says, and the JSON it wrote."""
    out = tmp_path / f"{script}.json"
    done = subprocess.run([sys.executable, str(PUZZLE.folder / "sweeps" / script), *args, "--json", str(out)],
                          capture_output=True, text=True, timeout=300,
                          env={**os.environ, "PYTHONPATH": str(Path(__file__).parents[1])})
    assert done.returncode == 0, done.stderr
    return json.loads(out.read_text())


def test_its_stage_sweep_times_each_fix_and_judges_its_choices(tmp_path):
    """sweeps/stages.py, the first measurement owed on the H100, at a CPU's sizes: a row per file, each judged right.
    It sweeps every honest style; here two of them, each in its own process as on the GPU (a process is most of a
    row's cost on the CPU: torch's import); every style's choices are judged in this process above."""
    stages = puzzle_file(PUZZLE, "sweeps/stages.py")
    assert sorted(stages.WORKLOADS) == sorted(HONEST) and stages.WORKLOADS[0] == "baseline.py"
    rows = run_sweep("stages.py", tmp_path, "--device", "cpu", "--calls", "1", "--workloads",
                     "baseline.py,alternatives/compiled_step.py")["results"]
    assert [r["workload"] for r in rows] == ["baseline.py", "alternatives/compiled_step.py"]
    assert all(r["ms_a_call"] > 0 and r["judged_rel_l2"] < PUZZLE.correctness.max_rel_l2 for r in rows), rows


def test_its_judge_reach_sweep_refuses_a_skipped_layer_and_no_attention_at_a_small_models_sizes(tmp_path):
    """sweeps/judge_reach.py, run at the scene's sizes on the CPU for MEASUREMENTS.md, here on the small model (a
    check of the script): the exact decode judged 0, a layer skipped or attention left out far past the tolerance,
    fp8 weights past it too."""
    judged = {r["decode"]: r["judged_rel_l2"] for r in run_sweep("judge_reach.py", tmp_path, "--small")}
    tolerance = PUZZLE.correctness.max_rel_l2
    assert judged["exact"] < tolerance / 4
    assert min(judged[d] for d in ("the last layer skipped", "a middle layer skipped", "no attention")) > 10 * tolerance
    assert judged["fp8"] > 2 * tolerance
