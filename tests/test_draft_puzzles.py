"""The draft puzzles (hidden until measured on the H100), as far as the CPU can check them: puzzle4's
decoding is decided by its spec, never by rounding, and its eager styles give the baseline's tokens
exactly; puzzle5's cache written in place decodes what torch.cat's copies decode; puzzle6's experts
run all at once give the loop's output, and its routes never pass the capacity its fix relies on;
drafts stay out of learners' sight until they ship.

The workloads are plain torch, so the eager ones run here on the CPU for real; the graphed and
compiled ones are the GPU's to grade (benchmarks/measure_draft.py).
"""

from __future__ import annotations

import shutil

import pytest
import torch

from tutor.catalog import all_puzzles, get_puzzle, load_puzzle
from tutor.dev_check import static_checks
from tutor.harness.loading import load_module

PUZZLE = get_puzzle("puzzle4", drafts=True)
P5 = get_puzzle("puzzle5", drafts=True)


def load(puzzle, relative: str):
    """A file of a puzzle's folder as a module of its own, loaded as the harness loads workloads (by path)."""
    return load_module(puzzle.folder / relative, f"{puzzle.id}_{relative.replace('/', '_')}", ())


def module(relative: str):
    return load(PUZZLE, relative)


SPEC = module("spec.py")


@pytest.mark.parametrize("seed", [1, 2, 3])
def test_each_sequence_ends_exactly_when_the_chain_says_and_stays_ended(seed):
    weights, tokens = SPEC.make_weights(seed, "cpu"), SPEC.make_input(seed * 7, "cpu")
    out = module("baseline.py").forward(weights, tokens)
    distances = [int((SPEC.ORDER == t).nonzero()) for t in tokens]
    assert max(distances) in range(SPEC.STEPS // 4, 3 * SPEC.STEPS // 4)
    for row, d in zip(out, distances):
        assert row[d - 1] == SPEC.EOS and (row[d - 1:] == SPEC.EOS).all() and (row[:d - 1] != SPEC.EOS).all()


def test_greedy_choices_do_not_hang_on_rounding():
    """The same steps in float32 choose the same tokens as in bf16: the right token leads by hundreds."""
    weights, tokens = SPEC.make_weights(5, "cpu"), SPEC.make_input(11, "cpu")
    wide = {k: v.float() for k, v in weights.items()}
    step = module("baseline.py").step
    for _ in range(SPEC.STEPS // 2):
        logits = (wide["embed"][tokens] + torch.relu(wide["embed"][tokens] @ wide["w1"].T) @ wide["w2"].T) @ wide["out"].T
        top2 = logits.topk(2).values
        assert (top2[:, 0] - top2[:, 1] > 200).all()
        chosen = step(weights, tokens)
        assert torch.equal(chosen, logits.argmax(-1))
        tokens = chosen


@pytest.mark.parametrize("workload", ["every_step.py", "alternatives/check_every_chunk.py"])
def test_the_eager_styles_decode_the_baselines_tokens_exactly(workload):
    weights, baseline = SPEC.make_weights(9, "cpu"), module("baseline.py")
    other = module(workload)
    for seed in range(3):
        tokens = SPEC.make_input(seed, "cpu")
        assert torch.equal(other.forward(other.prepare(weights, "cpu"), tokens), baseline.forward(weights, tokens))


def test_a_draft_is_hidden_from_learners_until_asked_for(tmp_path, monkeypatch):
    assert "puzzle4" not in all_puzzles() and "puzzle4" in all_puzzles(drafts=True)
    monkeypatch.setenv("INFPROF_DRAFTS", "1")
    assert "puzzle4" in all_puzzles()
    monkeypatch.delenv("INFPROF_DRAFTS")
    folder = tmp_path / "p"
    shutil.copytree(get_puzzle("puzzle0").folder, folder)
    assert load_puzzle(folder).draft == ""


def test_a_draft_passes_what_its_folder_shows_and_waits_for_its_recordings():
    checks = {c.name: c for c in static_checks(PUZZLE)}
    assert checks["recordings"].status == "skipped" and "draft" in checks["recordings"].detail
    assert all(c.status != "failed" for c in checks.values()), [c for c in checks.values() if c.status == "failed"]


def test_the_compiled_chunks_decode_the_baselines_tokens_eagerly_too():
    """Its module, uncompiled, on the CPU: the same tokens (the compile and its graphs are the GPU's to test)."""
    alternative, baseline = module("alternatives/compiled_chunks.py"), module("baseline.py")
    weights, tokens = SPEC.make_weights(13, "cpu"), SPEC.make_input(4, "cpu")
    eager = alternative.Chunk(weights).eval()
    assert torch.equal(alternative.forward(eager, tokens), baseline.forward(weights, tokens))


# -- puzzle5 (a draft too): the cache written in place decodes what torch.cat's copies decode ------------

def test_puzzle5_the_cache_written_in_place_decodes_what_the_copies_decode():
    spec5, baseline, in_place = (load(P5, f) for f in ("spec.py", "baseline.py", "alternatives/in_place.py"))
    weights, x = spec5.make_weights(3, "cpu"), spec5.make_input(8, "cpu")
    expected = baseline.forward(weights, x)
    got = in_place.forward(in_place.prepare(weights, "cpu"), x)
    rel = (torch.linalg.vector_norm(got - expected) / torch.linalg.vector_norm(expected)).item()
    print(f"in_place vs baseline: relative L2 {rel:.2e}")
    assert expected.shape == (spec5.BATCH, spec5.STEPS, spec5.HIDDEN) and rel < P5.correctness.max_rel_l2 / 10


def test_puzzle5_is_a_draft_whose_folder_checks_pass():
    checks = {c.name: c for c in static_checks(P5)}
    assert "puzzle5" not in all_puzzles() and checks["recordings"].status == "skipped"
    assert all(c.status != "failed" for c in checks.values()), [c for c in checks.values() if c.status == "failed"]


# -- puzzle6 (a draft too): every expert at once gives the loop's output -----------------------------

P6 = get_puzzle("puzzle6", drafts=True)


def test_puzzle6_routes_are_skewed_and_never_past_capacity():
    spec6 = load(P6, "spec.py")
    for seed in range(20):
        counts = torch.bincount(spec6.make_input(seed, "cpu")["expert"], minlength=spec6.EXPERTS)
        assert int(counts.sum()) == spec6.TOKENS and int(counts.max()) <= spec6.CAPACITY
        assert int((counts < 8).sum()) >= 8  # many quiet experts: the loop's GEMMs are tiny


@pytest.mark.parametrize("workload", ["alternatives/padded_bmm.py", "alternatives/compiled_padded.py"])
def test_puzzle6_every_expert_at_once_gives_the_loops_output(workload):
    spec6, baseline, other = (load(P6, f) for f in ("spec.py", "baseline.py", workload))
    weights = spec6.make_weights(2, "cpu")
    for seed in range(2):
        x = spec6.make_input(seed, "cpu")
        expected = baseline.forward(weights, x).float()
        if workload.endswith("compiled_padded.py"):  # its function uncompiled: compiling is the GPU's to test
            got = other.layer(weights["up"], weights["down"], x["x"], x["expert"]).float()
        else:
            got = other.forward(other.prepare(weights, "cpu"), x).float()
        rel = (torch.linalg.vector_norm(got - expected) / torch.linalg.vector_norm(expected)).item()
        print(workload, f"relative L2 {rel:.2e}")
        assert rel < P6.correctness.max_rel_l2 / 4


def test_puzzle6_is_a_draft_whose_folder_checks_pass():
    checks = {c.name: c for c in static_checks(P6)}
    assert "puzzle6" not in all_puzzles() and checks["recordings"].status == "skipped"
    assert all(c.status != "failed" for c in checks.values()), [c for c in checks.values() if c.status == "failed"]
