"""puzzle4, A busy server, an idle GPU, as far as the CPU can check it: a call's future is found only by decoding it
(which of a token's two next tokens comes is the memory's choice, from a prompt drawn at grade time, so no table,
spec or weight tells it, nor when the batch ends); any other token trails far behind, so a step that skipped the
model's work picks wrong; the judge accepts an honest order of sums and refuses a decode that skipped the memory;
the eager styles, and the reference's and compiled style's steps run eagerly, give the baseline's tokens; its
recording shows what the story names (its folder: tests/test_dev_check.py; study mode's tests run over every GPU
puzzle, this one too). The tiers were set on the H100 (MEASUREMENTS.md).
"""

from __future__ import annotations

import pytest
import torch

from conftest import PUZZLE4_NARROW, float32_step, memory_unread, puzzle_file, resized_copies
from tutor.catalog import get_puzzle
from tutor.harness.checks import compare
from tutor.harness.loading import load_module
from tutor.harness.wire import portable

pytestmark = pytest.mark.bf16_products_exact  # its scene's bf16 products, sooner (tests/conftest.py)

PUZZLE = get_puzzle("puzzle4")
TOLERANCE = PUZZLE.correctness.max_rel_l2


def module(relative: str):
    return puzzle_file(PUZZLE, relative)


SPEC, BASELINE = module("spec.py"), module("baseline.py")
NARROW_FILES = ["spec.py", "baseline.py", "solution/workload.py", "alternatives/graph_per_step.py",
                "alternatives/compiled_chunks.py"]


@pytest.fixture(scope="module")
def narrow(tmp_path_factory) -> dict:
    """The scene's files at a CPU's sizes (conftest.PUZZLE4_NARROW), for the tests that hold a style's code to the
    baseline's (the scene's own properties are tested at its sizes), by file name."""
    paths = resized_copies(PUZZLE, NARROW_FILES, PUZZLE4_NARROW, tmp_path_factory.mktemp("puzzle4"))
    return {name: load_module(path, f"p4_narrow_{i}", ()) for i, (name, path) in enumerate(paths.items())}


def judged(weights: dict, prompts: torch.Tensor, tokens: torch.Tensor) -> float:
    """The relative L2 a grade reads for `tokens` (spec.judge, then tutor.harness.checks.compare)."""
    scored, best = SPEC.judge(weights, prompts, tokens)
    verdict = compare(portable(scored), portable(best))
    assert verdict["ok_structure"]
    return verdict["rel_l2"]


def ends(tokens: torch.Tensor) -> int:
    """The step the batch ended at (1-based), or STEPS + 1 if it never did."""
    done = (tokens == SPEC.EOS).all(0).nonzero()
    return int(done[0]) + 1 if len(done) else SPEC.STEPS + 1


@pytest.mark.parametrize("seed", [1, 2, 3])
def test_a_call_goes_where_its_decode_finds_and_ends_when_every_sequence_has(seed):
    """Each token the baseline returns is one of the two its token goes on to, a sequence stays ended once it is,
    the batch ends within the steps (the tokens after it end-of-sequence), and the judge finds every choice the
    best of its step."""
    weights, prompts = SPEC.make_weights(seed, "cpu"), SPEC.make_input(seed * 7, "cpu")
    assert prompts.shape == (SPEC.BATCH, SPEC.PROMPT)
    assert int(SPEC.PLACE[prompts[:, -1]].max()) in range(SPEC.NEAREST, SPEC.FARTHEST)
    tokens = BASELINE.forward(weights, prompts)
    assert tokens.dtype == torch.long and tokens.shape == (SPEC.BATCH, SPEC.STEPS)
    fed = torch.cat([prompts[:, -1:], tokens[:, :-1]], dim=1)
    for row_fed, row in zip(fed, tokens):
        for a, b in zip(row_fed.tolist(), row.tolist()):
            assert int(SPEC.PLACE[b]) in SPEC.next_places(int(SPEC.PLACE[a]))
    assert ends(tokens) <= SPEC.STEPS and (tokens[:, ends(tokens):] == SPEC.EOS).all()
    assert judged(weights, prompts, tokens) == 0.0


def memory_less_choices(weights: dict, tokens: torch.Tensor) -> torch.Tensor:
    """What each token would go on to with an empty memory: the table a workload could build in prepare()."""
    logits, _ = SPEC.step(weights, tokens, torch.zeros(len(tokens), SPEC.MEMORY))
    return logits.float().argmax(-1)


def test_the_memory_chooses_the_next_token_and_the_prompt_drawn_at_grade_time_moves_it():
    """Issue 76's guarantee 3: the next token is not known before the step that makes it. Where a token has two to
    go on to, an empty memory's choice (a table's) is the decode's only about half the time; and the same last token
    after other prompt tokens decodes along another path, ending at another step."""
    weights, prompts = SPEC.make_weights(4, "cpu"), SPEC.make_input(9, "cpu")
    tokens = BASELINE.forward(weights, prompts)
    fed = torch.cat([prompts[:, -1:], tokens[:, :-1]], dim=1)[:, :ends(tokens)].reshape(-1)
    chosen = tokens[:, :ends(tokens)].reshape(-1)
    branching = torch.tensor([len(SPEC.next_places(int(SPEC.PLACE[t]))) == 2 for t in fed])
    agree = (memory_less_choices(weights, fed) == chosen)[branching].float().mean()
    print("an empty memory's choice is the decode's", float(agree), "of", int(branching.sum()), "choices")
    assert 0.3 < agree < 0.7
    other = prompts.clone()
    other[:, :-1] = SPEC.make_input(10, "cpu")[:, :-1]
    moved = BASELINE.forward(weights, other)
    assert (moved != tokens).any(1).float().mean() > 0.8  # nearly every sequence's path moves
    assert judged(weights, prompts, moved) > 5 * TOLERANCE


def test_any_other_token_trails_the_two_next_ones_far_behind():
    """Along a decode, the best token that is neither of the two next ones trails the better of them by 100 or more
    (spec.py says about 150), end-of-sequence's own next included: only the memory's tie-break is ever close."""
    weights, prompts = SPEC.make_weights(5, "cpu"), SPEC.make_input(11, "cpu")
    tokens = BASELINE.forward(weights, prompts)
    fed = torch.cat([prompts[:, -1:], tokens[:, :-1]], dim=1)
    memory = torch.zeros(SPEC.BATCH, SPEC.MEMORY)
    for j in range(SPEC.PROMPT - 1):
        _, memory = SPEC.step(weights, prompts[:, j], memory)
    leads = []
    for i in range(ends(tokens) + 2):
        logits, memory = SPEC.step(weights, fed[:, i], memory)
        logits = logits.float()
        for b in range(SPEC.BATCH):
            nexts = torch.tensor([int(SPEC.ORDER[p]) for p in SPEC.next_places(int(SPEC.PLACE[fed[b, i]]))])
            others = logits[b].clone()
            others[nexts] = -float("inf")
            leads.append(float(logits[b, nexts].max() - others.max()))
    print("least lead", min(leads))
    assert min(leads) > 100


def wide_forward(weights: dict, prompts: torch.Tensor) -> torch.Tensor:
    """The baseline's decode with every step in float32."""
    step = BASELINE.step
    BASELINE.step = float32_step(SPEC.HIDDEN)
    try:
        return BASELINE.forward({k: v.float() for k, v in weights.items()}, prompts)
    finally:
        BASELINE.step = step


def test_an_honest_order_of_sums_is_judged_right_along_its_own_path():
    """Every step in float32 instead of bf16 picks the other of two near-equal tokens now and then, and decodes on
    along its own path from there: judged along it, every choice is within TIE of its step's best."""
    weights = SPEC.make_weights(8, "cpu")
    parted = 0
    for seed in (3, 4):
        prompts = SPEC.make_input(seed, "cpu")
        wide = wide_forward(weights, prompts)
        parted += int((wide != BASELINE.forward(weights, prompts)).any(1).sum())
        assert judged(weights, prompts, wide) == 0.0
    print(parted, "sequences of 32 took another path in float32")


def test_no_table_answers_a_call():
    """What a table built in prepare() could hold is refused far outside the tolerance: tokens from a memory that
    never read the prompt, from steps that skip the memory's read-back (each token's hidden state tabulated), and
    tabulates_the_chain's (cheats/), which follows each token's empty-memory choice without running the model."""
    weights, prompts = SPEC.make_weights(4, "cpu"), SPEC.make_input(9, "cpu")
    unprompted = prompts.clone()
    unprompted[:, :-1] = 0  # end-of-sequence read back into the memory: as good as an empty prompt
    assert judged(weights, prompts, BASELINE.forward(weights, unprompted)) > 5 * TOLERANCE
    assert judged(weights, prompts, BASELINE.forward(memory_unread(SPEC, weights), prompts)) > 20 * TOLERANCE
    cheat = module("cheats/tabulates_the_chain.py")
    assert judged(weights, prompts, cheat.forward(cheat.prepare(weights, "cpu"), prompts)) > 20 * TOLERANCE


def test_a_decode_stopped_early_a_token_out_of_the_vocabulary_or_one_past_the_end_is_refused():
    weights, prompts = SPEC.make_weights(4, "cpu"), SPEC.make_input(9, "cpu")
    tokens = BASELINE.forward(weights, prompts)
    early = tokens.clone()
    early[:, ends(tokens) // 2:] = SPEC.EOS
    assert judged(weights, prompts, early) > 20 * TOLERANCE
    outside = tokens.clone()
    outside[0, 0] = SPEC.VOCAB + 5
    assert judged(weights, prompts, outside) > 20 * TOLERANCE
    past_the_end = tokens.clone()  # the judge stops at the batch's end only where every later token is EOS
    past_the_end[3, ends(tokens) + 2] = SPEC.ORDER[5]
    assert judged(weights, prompts, past_the_end) > 20 * TOLERANCE


def test_the_graph_per_step_alternative_gives_the_baselines_tokens_eagerly(narrow):
    """Its step on its own state, run eagerly on the CPU as its forward() replays it."""
    spec, baseline, other = narrow["spec.py"], narrow["baseline.py"], narrow["alternatives/graph_per_step.py"]
    weights = spec.make_weights(9, "cpu")
    for seed in range(3):
        prompts = spec.make_input(seed, "cpu")
        state = {"w": weights, "tokens": torch.ones(spec.BATCH, dtype=torch.long),
                 "memory": torch.zeros(spec.BATCH, spec.MEMORY)}
        for j in range(spec.PROMPT - 1):
            state["tokens"].copy_(prompts[:, j])
            other.one_step(state)
        state["tokens"].copy_(prompts[:, -1])
        out = torch.full((spec.BATCH, spec.STEPS), spec.EOS)
        for i in range(spec.STEPS):
            other.one_step(state)
            out[:, i] = state["tokens"]
            if state["done"]:
                break
        assert torch.equal(out, baseline.forward(weights, prompts))


def test_the_compiled_chunks_give_the_baselines_tokens_eagerly_too(narrow):
    """Its modules, uncompiled, on the CPU (the compile and its graphs are the GPU's to test)."""
    spec, baseline, alternative = narrow["spec.py"], narrow["baseline.py"], narrow["alternatives/compiled_chunks.py"]
    weights, prompts = spec.make_weights(13, "cpu"), spec.make_input(4, "cpu")
    eager = (alternative.Prompt(weights).eval(), alternative.Chunk(weights).eval())
    assert torch.equal(alternative.forward(eager, prompts), baseline.forward(weights, prompts))


def test_the_references_graphed_steps_give_the_baselines_tokens_eagerly(narrow):
    """The prompt and the chunks the reference captures, run eagerly on the CPU as its forward() replays them: a
    call that ends early replays only the chunks up to its end and one more, on a state the last call (a longer
    one) left, and its tokens are the baseline's, end-of-sequence past the end included."""
    spec, baseline, reference = narrow["spec.py"], narrow["baseline.py"], narrow["solution/workload.py"]
    weights = spec.make_weights(10, "cpu")
    state = {"w": weights, "prompts": torch.ones(spec.BATCH, spec.PROMPT, dtype=torch.long),
             "tokens": torch.ones(spec.BATCH, dtype=torch.long), "memory": torch.zeros(spec.BATCH, spec.MEMORY),
             "out": torch.zeros(spec.BATCH, spec.STEPS, dtype=torch.long), "running": torch.ones((), dtype=torch.bool)}
    calls = [(spec.make_input(seed, "cpu"),) for seed in range(6)]
    calls = sorted(((p, baseline.forward(weights, p)) for (p,) in calls), key=lambda c: -ends(c[1]))
    assert ends(calls[0][1]) > ends(calls[-1][1])
    for prompts, expected in calls[:1] + calls[-1:]:  # the longest call, then the shortest
        state["prompts"].copy_(prompts)
        reference.read_prompt(state)
        for k, start in enumerate(range(0, spec.STEPS, reference.CHUNK)):
            reference.chunk(state, start)
            if not state["running"]:
                for extra in range(k + 1, min(k + 1 + reference.AHEAD, spec.STEPS // reference.CHUNK)):
                    reference.chunk(state, extra * reference.CHUNK)
                break
        assert torch.equal(state["out"], expected)


def test_its_recording_shows_the_syncs_and_the_idle_gpu_the_story_names():
    from tutor.metrics import ProfileMetrics

    assert not PUZZLE.draft  # it ships: tests/test_dev_check.py checks its whole folder
    recorded = ProfileMetrics.from_json((PUZZLE.recordings_dir / "baseline_metrics.json").read_text())
    assert recorded.values["sync.calls_per_iter"] >= SPEC.NEAREST // 3  # one a step, the fewest steps at least
    assert recorded.values["gpu.busy_fraction"] < 0.5


def test_only_a_step_that_runs_the_mlp_finds_the_next_token():
    """A step that skipped the MLP (the embedding against the output projection) would pick neither of the two
    next tokens: dropping the model's work cannot pass for the same decoding."""
    weights = SPEC.make_weights(6, "cpu")
    tokens = SPEC.ORDER[10:522]
    nexts = torch.stack([SPEC.ORDER[torch.tensor(SPEC.next_places(k))] for k in range(10, 522)])
    chosen, _ = BASELINE.step(weights, tokens, torch.zeros(len(tokens), SPEC.MEMORY))
    assert (chosen[:, None] == nexts).any(1).all()
    skipped = (weights["embed"][tokens].float() @ weights["out"].float().T).argmax(-1)
    assert (skipped[:, None] == nexts).any(1).float().mean() < 0.01
