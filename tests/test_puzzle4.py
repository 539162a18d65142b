"""puzzle4, A busy server, an idle GPU, as far as the CPU can check it: decoding is decided by its spec, never
by rounding; the memory makes every score depend on the prompt drawn at grade time and on every step before it,
so no table built in prepare() answers a call; the eager styles, and the reference's and compiled style's steps
run eagerly, give the baseline's scores; its H100 recording shows what the story names (its folder:
tests/test_dev_check.py; study mode's tests run over every GPU puzzle, this one too). The tiers were set on the
H100 (MEASUREMENTS.md).
"""

from __future__ import annotations

import pytest
import torch

from conftest import decode_with_memory, memory_unread, puzzle_file
from tutor.catalog import get_puzzle

pytestmark = pytest.mark.bf16_products_exact  # its scene's bf16 products, sooner (tests/conftest.py)

PUZZLE = get_puzzle("puzzle4")
TOLERANCE = PUZZLE.correctness.max_rel_l2


# A quarter of the width, for the tests that hold a style's code to the baseline's (the scene's own properties are
# tested at its sizes): its bf16 steps, on a CPU without bf16 arithmetic, made those 13 s of the suite's CPU.
NARROW = {"HIDDEN": 128, "FFN": 512, "MEMORY": 64}


def module(relative: str, sizes: dict | None = None):
    return puzzle_file(PUZZLE, relative, sizes)


SPEC, BASELINE = module("spec.py"), module("baseline.py")


@pytest.fixture(scope="module")
def narrow():
    """The scene's spec and baseline at a quarter of its width, where the chain is still followed exactly: a call
    ends at its farthest start's distance, as at full width."""
    spec, baseline = module("spec.py", NARROW), module("baseline.py", NARROW)
    weights, prompts = spec.make_weights(10, "cpu"), spec.make_input(0, "cpu")
    farthest = max(int((spec.ORDER == t).nonzero()) for t in prompts[:, -1])
    assert int((baseline.forward(weights, prompts) != 0).any(0).nonzero().max()) + 1 == farthest
    return spec, baseline


def rel_l2(out: torch.Tensor, ref: torch.Tensor) -> float:
    return float((out.double() - ref.double()).norm() / ref.double().norm())


def decode(weights: dict, prompts: torch.Tensor, steps: int = SPEC.STEPS, read_prompt: bool = True):
    return decode_with_memory(SPEC, BASELINE, weights, prompts, steps, read_prompt)


@pytest.mark.parametrize("seed", [1, 2, 3])
def test_each_sequence_ends_exactly_when_the_chain_says_and_the_scores_stop_with_the_batch(seed):
    weights, prompts = SPEC.make_weights(seed, "cpu"), SPEC.make_input(seed * 7, "cpu")
    assert prompts.shape == (SPEC.BATCH, SPEC.PROMPT)
    tokens, _ = decode(weights, prompts)
    distances = [int((SPEC.ORDER == t).nonzero()) for t in prompts[:, -1]]
    assert max(distances) in range(SPEC.STEPS // 4, 3 * SPEC.STEPS // 4)
    for row, d in zip(tokens, distances):
        assert row[d - 1] == SPEC.EOS and (row[d - 1:] == SPEC.EOS).all() and (row[:d - 1] != SPEC.EOS).all()
    out = BASELINE.forward(weights, prompts)
    assert (out[:, :max(distances)] != 0).all() and (out[:, max(distances):] == 0).all()


def test_greedy_choices_do_not_hang_on_rounding():
    """The same steps in float32 choose the same tokens as in bf16, with the memory read back: the right token
    leads by 200 or more (spec.py says about 240)."""
    weights, prompts = SPEC.make_weights(5, "cpu"), SPEC.make_input(11, "cpu")
    wide = {k: v.float() for k, v in weights.items()}
    memory, tokens = torch.zeros(SPEC.BATCH, SPEC.MEMORY), prompts[:, -1]
    for _ in range(SPEC.STEPS // 2):
        h = wide["embed"][tokens] + (memory @ wide["mix"])[:, :SPEC.HIDDEN]
        logits = (h + torch.relu(h @ wide["w1"].T) @ wide["w2"].T) @ wide["out"].T
        top2 = logits.topk(2).values
        assert (top2[:, 0] - top2[:, 1] > 200).all()
        chosen, _, after = BASELINE.step(weights, tokens, memory)
        assert torch.equal(chosen, logits.argmax(-1))
        tokens, memory = chosen, after


def test_an_honest_order_of_sums_stays_well_inside_the_tolerance():
    """Every step in float32 instead of bf16 (a larger difference than any honest kernel's order of sums makes):
    the scores move by under a third of the tolerance puzzle.toml sets."""
    weights, prompts = SPEC.make_weights(8, "cpu"), SPEC.make_input(3, "cpu")
    wide = {k: v.float() for k, v in weights.items()}
    step = BASELINE.step

    def wide_step(w, tokens, memory):
        mixed = memory @ w["mix"]
        h = w["embed"][tokens] + mixed[:, :SPEC.HIDDEN]
        h = h + torch.relu(h @ w["w1"].T) @ w["w2"].T
        memory = torch.tanh(mixed[:, SPEC.HIDDEN:] + h @ w["write"])
        return (h @ w["out"].T).argmax(dim=-1), memory @ w["gate"], memory

    BASELINE.step = wide_step
    try:
        wide_out = BASELINE.forward(wide, prompts)
    finally:
        BASELINE.step = step
    assert 0 < rel_l2(wide_out, BASELINE.forward(weights, prompts)) < TOLERANCE / 3


def test_no_table_answers_a_call():
    """What a table built in prepare() could hold is refused far outside the tolerance: the scores of a memory
    that never read the prompt (the chain from its start token alone), and those of steps that skip the memory's
    read-back (each token's hidden state tabulated): each off by over a third (MEASUREMENTS.md).
    tabulates_the_chain (cheats/) does the first."""
    weights, prompts = SPEC.make_weights(4, "cpu"), SPEC.make_input(9, "cpu")
    _, scores = decode(weights, prompts, steps=40)
    _, unprompted = decode(weights, prompts, steps=40, read_prompt=False)
    assert rel_l2(unprompted, scores) > 5 * TOLERANCE
    unread = memory_unread(SPEC, weights)
    _, skipped = decode(unread, prompts, steps=40)
    assert rel_l2(skipped, scores) > 5 * TOLERANCE
    cheat = module("cheats/tabulates_the_chain.py")
    tabulated = cheat.forward(cheat.prepare(weights, "cpu"), prompts)
    assert rel_l2(tabulated, BASELINE.forward(weights, prompts)) > 5 * TOLERANCE


def test_the_memory_never_changes_a_choice():
    """Tokens with the memory read back are the tokens without it: the chain stays what spec.ORDER says."""
    weights, prompts = SPEC.make_weights(2, "cpu"), SPEC.make_input(5, "cpu")
    unread = memory_unread(SPEC, weights)
    assert torch.equal(decode(weights, prompts)[0], decode(unread, prompts)[0])


def test_the_graph_per_step_alternative_gives_the_baselines_scores_eagerly(narrow):
    """Its step on its own state, run eagerly on the CPU as its forward() replays it."""
    spec, baseline = narrow
    other = module("alternatives/graph_per_step.py", NARROW)
    weights = spec.make_weights(9, "cpu")
    for seed in range(3):
        prompts = spec.make_input(seed, "cpu")
        state = {"w": weights, "tokens": torch.ones(spec.BATCH, dtype=torch.long),
                 "memory": torch.ones(spec.BATCH, spec.MEMORY)}
        state["memory"].zero_()
        for j in range(spec.PROMPT - 1):
            state["tokens"].copy_(prompts[:, j])
            other.one_step(state)
        state["tokens"].copy_(prompts[:, -1])
        out = torch.zeros(spec.BATCH, spec.STEPS)
        for i in range(spec.STEPS):
            other.one_step(state)
            out[:, i] = state["score"]
            if state["done"]:
                break
        assert torch.equal(out, baseline.forward(weights, prompts))


def test_the_compiled_chunks_give_the_baselines_scores_eagerly_too(narrow):
    """Its modules, uncompiled, on the CPU (the compile and its graphs are the GPU's to test)."""
    spec, baseline = narrow
    alternative = module("alternatives/compiled_chunks.py", NARROW)
    weights, prompts = spec.make_weights(13, "cpu"), spec.make_input(4, "cpu")
    eager = (alternative.Prompt(weights).eval(), alternative.Chunk(weights).eval())
    assert torch.equal(alternative.forward(eager, prompts), baseline.forward(weights, prompts))


def test_the_references_graphed_steps_give_the_baselines_scores_eagerly(narrow):
    """The prompt and the chunks the reference captures, run eagerly on the CPU as its forward() replays them: a
    call that ends early replays only the chunks up to its end and one more, on a state the last call (a longer
    one) left, and its scores are the baseline's, zeros past the end included."""
    spec, baseline = narrow
    reference = module("solution/workload.py", NARROW)
    weights = spec.make_weights(10, "cpu")
    state = {"w": weights, "prompts": torch.ones(spec.BATCH, spec.PROMPT, dtype=torch.long),
             "tokens": torch.ones(spec.BATCH, dtype=torch.long), "memory": torch.zeros(spec.BATCH, spec.MEMORY),
             "out": torch.zeros(spec.BATCH, spec.STEPS), "running": torch.ones((), dtype=torch.bool)}
    calls = sorted((spec.make_input(seed, "cpu") for seed in range(6)), key=lambda p: -int(
        (spec.ORDER[:, None] == p[:, -1]).nonzero()[:, 0].max()))
    for prompts in calls[:1] + calls[-1:]:  # the longest call, then the shortest
        state["prompts"].copy_(prompts)
        reference.read_prompt(state)
        for k, start in enumerate(range(0, spec.STEPS, reference.CHUNK)):
            reference.chunk(state, start)
            if not state["running"]:
                for extra in range(k + 1, min(k + 1 + reference.AHEAD, spec.STEPS // reference.CHUNK)):
                    reference.chunk(state, extra * reference.CHUNK)
                break
        assert torch.equal(state["out"], baseline.forward(weights, prompts))


def test_its_recording_shows_the_syncs_and_the_idle_gpu_the_story_names():
    from tutor.metrics import ProfileMetrics

    assert not PUZZLE.draft  # it ships: tests/test_dev_check.py checks its whole folder
    recorded = ProfileMetrics.from_json((PUZZLE.recordings_dir / "baseline_metrics.json").read_text())
    assert recorded.values["sync.calls_per_iter"] >= SPEC.STEPS // 4  # one a step, at least the fewest steps
    assert recorded.values["gpu.busy_fraction"] < 0.5


def test_only_a_step_that_runs_the_mlp_finds_the_next_token():
    """A step that skipped the MLP (the embedding against the output projection) would pick other tokens:
    dropping the model's work cannot pass for the same decoding."""
    weights = SPEC.make_weights(6, "cpu")
    tokens, successors = SPEC.ORDER[1:513], SPEC.ORDER[:512]  # ORDER[k] is one step from ORDER[k - 1]
    chosen, _, _ = BASELINE.step(weights, tokens, torch.zeros(len(tokens), SPEC.MEMORY))
    assert torch.equal(chosen, successors)
    skipped = (weights["embed"][tokens].float() @ weights["out"].float().T).argmax(-1)
    assert (skipped == successors).float().mean() < 0.01
