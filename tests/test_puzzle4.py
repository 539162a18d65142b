"""puzzle4, A busy server, an idle GPU, as far as the CPU can check it: decoding is decided by
its spec, never by rounding; the eager and (uncompiled) compiled styles give the baseline's tokens
exactly; its H100 recording shows what the story names (its folder: tests/test_dev_check.py; study
mode's tests run over every GPU puzzle, this one too). The tiers were set on the H100 (MEASUREMENTS.md).
"""

from __future__ import annotations

import pytest
import torch

from conftest import puzzle_file
from tutor.catalog import get_puzzle

PUZZLE = get_puzzle("puzzle4")


def module(relative: str):
    return puzzle_file(PUZZLE, relative)


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


def test_the_eager_alternative_decodes_the_baselines_tokens_exactly():
    weights, baseline = SPEC.make_weights(9, "cpu"), module("baseline.py")
    other = module("alternatives/check_every_chunk.py")
    for seed in range(3):
        tokens = SPEC.make_input(seed, "cpu")
        assert torch.equal(other.forward(other.prepare(weights, "cpu"), tokens), baseline.forward(weights, tokens))


def test_the_compiled_chunks_decode_the_baselines_tokens_eagerly_too():
    """Its module, uncompiled, on the CPU: the same tokens (the compile and its graphs are the GPU's to test)."""
    alternative, baseline = module("alternatives/compiled_chunks.py"), module("baseline.py")
    weights, tokens = SPEC.make_weights(13, "cpu"), SPEC.make_input(4, "cpu")
    eager = alternative.Chunk(weights).eval()
    assert torch.equal(alternative.forward(eager, tokens), baseline.forward(weights, tokens))


def test_its_recording_shows_the_syncs_and_the_idle_gpu_the_story_names():
    from tutor.metrics import ProfileMetrics

    assert not PUZZLE.draft  # it ships: tests/test_dev_check.py checks its whole folder
    recorded = ProfileMetrics.from_json((PUZZLE.recordings_dir / "h100_baseline_metrics.json").read_text())
    assert recorded.values["sync.calls_per_iter"] >= SPEC.STEPS // 4  # one a step, at least the fewest steps
    assert recorded.values["gpu.busy_fraction"] < 0.5


def test_only_a_step_that_runs_the_mlp_finds_the_next_token():
    """A step that skipped the MLP (the embedding against the output projection) would pick other tokens:
    dropping the model's work cannot pass for the same decoding."""
    weights = SPEC.make_weights(6, "cpu")
    tokens, successors = SPEC.ORDER[1:513], SPEC.ORDER[:512]  # ORDER[k] is one step from ORDER[k - 1]
    assert torch.equal(module("baseline.py").step(weights, tokens), successors)
    skipped = (weights["embed"][tokens].float() @ weights["out"].float().T).argmax(-1)
    assert (skipped == successors).float().mean() < 0.01
