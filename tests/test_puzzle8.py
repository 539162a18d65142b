"""puzzle8, Quick kernels, a slow chat, as far as the CPU can check it: a word is a stop word exactly
when its token is one (what the set lookup and the GPU table rely on); a call's future is found only by decoding it
(which of a token's two next tokens comes is the memory's choice, from a prompt drawn at grade time, so no table,
spec or weight tells it, nor when a sequence meets its stop word); any other token trails far behind, so a step
that skipped the model's work picks wrong; the judge accepts an honest order of sums and refuses a decode that
skipped the memory or stopped a sequence a step early or late; the host-run styles and the reference's steps run
eagerly give the baseline's tokens. Redesigned for issue 76 (before, the tokens followed a public ring); its
tiers were measured on the scene before (MEASUREMENTS.md).
"""

from __future__ import annotations

import pytest
import torch

from conftest import float32_step, memory_unread, puzzle_file
from tutor.catalog import get_puzzle
from tutor.harness.checks import compare
from tutor.harness.wire import portable
from tutor.metrics import ProfileMetrics

pytestmark = pytest.mark.bf16_products_exact  # its scene's bf16 products, sooner (tests/conftest.py)

PUZZLE = get_puzzle("puzzle8")
TOLERANCE = PUZZLE.correctness.max_rel_l2
NARROW = {"HIDDEN": 256, "FFN": 1024}  # a quarter of the width: the same ring, words and prompts, a CPU's share


def module(relative: str, sizes: dict | None = None):
    return puzzle_file(PUZZLE, relative, sizes)


SPEC, BASELINE = module("spec.py"), module("baseline.py")


@pytest.fixture(scope="module")
def full():
    """The scene at its size: the baseline's prepared weights, an input, and the baseline's tokens."""
    state = BASELINE.prepare(SPEC.make_weights(5, "cpu"), "cpu")
    prompts = SPEC.make_input(11, "cpu")
    return state, prompts, BASELINE.forward(state, prompts)


def judged(state: dict, prompts: torch.Tensor, tokens: torch.Tensor, spec=SPEC) -> float:
    """The relative L2 a grade reads for `tokens` (spec.judge, then tutor.harness.checks.compare)."""
    scored, best = spec.judge(state, prompts, tokens)
    verdict = compare(portable(scored), portable(best))
    assert verdict["ok_structure"]
    return verdict["rel_l2"]


def stops(tokens: torch.Tensor) -> torch.Tensor:
    """Each sequence's stop step: its last token before PAD."""
    return (tokens != SPEC.PAD).sum(1) - 1


def test_a_word_is_a_stop_word_exactly_when_its_token_is_a_stop_token():
    """What the reference relies on: the search over whole words finds a stop word only as a whole token."""
    stop = BASELINE.prepare({"stop_words": SPEC.STOP_WORDS}, "cpu")["stop"]
    assert len(set(SPEC.WORDS)) == SPEC.VOCAB
    assert len(SPEC.STOP_WORDS) == SPEC.VOCAB // SPEC.STOP_EVERY * SPEC.STOP_BAND
    stop_words = set(SPEC.STOP_WORDS)
    assert all(bool(stop.search(" a1 " + word)) == (word in stop_words) for word in SPEC.WORDS)
    assert not stop.search(" " + " ".join(w for w in SPEC.WORDS[:300] if w not in stop_words))  # none across words


def test_each_sequence_goes_where_its_decode_finds_and_stops_at_its_first_stop_word(full):
    """Each token is one of the two its token goes on to, a sequence's last is its first stop word, PAD after it,
    every sequence stops within the steps, the batch ends mid-way, and the judge finds every choice the best."""
    state, prompts, tokens = full
    assert tokens.dtype == torch.long and tokens.shape == (SPEC.BATCH, SPEC.STEPS)
    is_stop = SPEC.is_stop(SPEC.WORDS, SPEC.STOP_WORDS, "cpu")
    fed = torch.cat([prompts[:, -1:], tokens[:, :-1]], dim=1)
    for b, end in enumerate(stops(tokens).tolist()):
        steps = (SPEC.PLACE[tokens[b, :end + 1]] - SPEC.PLACE[fed[b, :end + 1]]) % SPEC.VOCAB
        assert set(steps.tolist()) <= set(SPEC.STRIDES)
        assert is_stop[tokens[b, end]] and not is_stop[tokens[b, :end]].any()
        assert (tokens[b, end + 1:] == SPEC.PAD).all()
    print("the batch ends at step", int(stops(tokens).max()) + 1)
    assert SPEC.STEPS // 4 <= int(stops(tokens).max()) < SPEC.STEPS - 1
    assert judged(state, prompts, tokens) == 0.0


def test_the_memory_chooses_the_next_token_and_the_prompt_drawn_at_grade_time_moves_it(full):
    """Issue 76's guarantee 3: an empty memory's choice (a table's) is the decode's only about half the time, and the
    same start tokens after other prompt tokens decode along other paths, judged far outside the tolerance."""
    state, prompts, tokens = full
    live = tokens != SPEC.PAD
    fed = torch.cat([prompts[:, -1:], tokens[:, :-1]], dim=1)[live]
    logits, _ = SPEC.step(state, fed, torch.zeros(len(fed), SPEC.MEMORY))
    agree = float((logits.float().argmax(-1) == tokens[live]).float().mean())
    print("an empty memory's choice is the decode's", agree, "of", len(fed), "choices")
    assert 0.3 < agree < 0.7
    other = prompts.clone()
    other[:, :-1] = SPEC.make_input(12, "cpu")[:, :-1]
    moved = BASELINE.forward(state, other)
    assert (moved != tokens).any(1).float().mean() > 0.8
    assert judged(state, prompts, moved) > 5 * TOLERANCE


def test_any_other_token_trails_the_two_next_ones_far_behind(full):
    """Along the decode's first steps, the best token that is neither of the two next ones trails the better of them
    by 300 or more (spec.py says about 400): only the memory's tie-break is ever close."""
    state, prompts, tokens = full
    memory = torch.zeros(SPEC.BATCH, SPEC.MEMORY)
    for j in range(SPEC.PROMPT - 1):
        _, memory = SPEC.step(state, prompts[:, j], memory)
    fed = torch.cat([prompts[:, -1:], tokens[:, :-1]], dim=1)
    leads = []
    for i in range(6):
        logits, memory = SPEC.step(state, fed[:, i], memory)
        logits = logits.float()
        nexts = SPEC.ORDER[(SPEC.PLACE[fed[:, i]][:, None] + torch.tensor(SPEC.STRIDES)) % SPEC.VOCAB]
        others = logits.scatter(1, nexts, -float("inf"))
        leads += (logits.gather(1, nexts).max(1).values - others.max(1).values).tolist()
    print("least lead", min(leads))
    assert min(leads) > 300


def test_an_honest_order_of_sums_is_judged_right_along_its_own_path(full):
    """Every step in float32 instead of bf16 picks the other of two near-equal tokens now and then, and decodes on
    along its own path from there: judged along it, every choice is within TIE of its step's best."""
    state, prompts, tokens = full
    wide = {k: (v.float() if isinstance(v, torch.Tensor) else v) for k, v in state.items()}
    step = BASELINE.step
    BASELINE.step = float32_step(SPEC.HIDDEN)
    try:
        wide_out = BASELINE.forward(wide, prompts)
    finally:
        BASELINE.step = step
    print(int((wide_out != tokens).any(1).sum()), "sequences of 64 took another path in float32")
    assert judged(state, prompts, wide_out) == 0.0


def test_no_table_answers_a_call(full):
    """What a table built in prepare() could hold is refused far outside the tolerance: tokens from steps that skip
    the memory's read-back (each token's hidden state tabulated), and tabulates_the_ring's (cheats/), which follows
    each token's empty-memory choice without running the model."""
    state, prompts, _ = full
    assert judged(state, prompts, BASELINE.forward(memory_unread(SPEC, state), prompts)) > 5 * TOLERANCE
    cheat = module("cheats/tabulates_the_ring.py")
    assert judged(state, prompts, cheat.forward(cheat.prepare(state, "cpu"), prompts)) > 5 * TOLERANCE


def test_a_sequence_stopped_a_step_late_or_early_or_a_token_out_of_the_vocabulary_is_refused(full):
    """Every sequence's stop matters: one token more, or one fewer, in one sequence of 64 reads far outside the
    tolerance; so does a token that is no token."""
    state, prompts, tokens = full
    for b in (int(stops(tokens).argmin()), int(stops(tokens).argmax())):
        end = int(stops(tokens)[b])
        late, early = tokens.clone(), tokens.clone()
        late[b, end + 1] = SPEC.ORDER[(SPEC.PLACE[tokens[b, end]] + 1) % SPEC.VOCAB]
        early[b, end] = SPEC.PAD
        assert judged(state, prompts, late) > 100 * TOLERANCE and judged(state, prompts, early) > 100 * TOLERANCE
    outside = tokens.clone()
    outside[0, 0] = SPEC.VOCAB + 5
    assert judged(state, prompts, outside) > 100 * TOLERANCE


@pytest.fixture(scope="module")
def narrow():
    """The scene at a quarter of its width: its spec, baseline, weights, an input and the baseline's tokens."""
    spec, baseline = module("spec.py", NARROW), module("baseline.py", NARROW)
    weights, prompts = spec.make_weights(9, "cpu"), spec.make_input(3, "cpu")
    expected = baseline.forward(baseline.prepare(weights, "cpu"), prompts)
    return spec, baseline, weights, prompts, expected


@pytest.mark.parametrize("workload", ["alternatives/decode_then_detokenize.py", "alternatives/stop_set.py",
                                      "alternatives/stop_table_eager.py"])
def test_the_host_runnable_styles_give_the_baselines_tokens(workload, narrow):
    _, _, weights, prompts, expected = narrow
    other = module(workload, {"HIDDEN": NARROW["HIDDEN"]})
    assert torch.equal(other.forward(other.prepare(weights, "cpu"), prompts), expected)


def test_the_references_graphed_parts_give_the_baselines_tokens_eagerly(narrow):
    """The prompt's read and the chunks the reference captures, run eagerly on the CPU as its forward() replays
    them, on a state the call before (a longer one) left: the baseline's tokens, PAD past each stop included."""
    spec, baseline, weights, longest, expected = narrow
    reference = module("solution/workload.py", {"HIDDEN": NARROW["HIDDEN"]})
    state = {"w": weights, "is_stop": spec.is_stop(weights["words"], weights["stop_words"], "cpu"),
             "prompts": torch.zeros(spec.BATCH, spec.PROMPT, dtype=torch.long),
             "tokens": torch.zeros(spec.BATCH, dtype=torch.long), "memory": torch.zeros(spec.BATCH, spec.MEMORY),
             "out": torch.zeros(spec.BATCH, spec.STEPS, dtype=torch.long),
             "ends": torch.zeros(spec.BATCH, dtype=torch.long),
             "done": torch.zeros((), dtype=torch.bool), "steps": torch.arange(spec.STEPS)}
    shortest = min((spec.make_input(seed, "cpu") for seed in range(4, 7)),
                   key=lambda p: int(spec.PLACE[p[:, -1]].remainder(spec.STOP_EVERY).min()))
    wanted = [expected, baseline.forward(baseline.prepare(weights, "cpu"), shortest)]
    assert stops(wanted[1]).max() < stops(expected).max()
    for prompts, want in zip((longest, shortest), wanted):  # a longer call, then a shorter one
        state["prompts"].copy_(prompts)
        state["out"].fill_(spec.PAD)
        reference.read_prompt(state)
        for start in range(0, spec.STEPS, reference.CHUNK):
            reference.chunk(state, start)
            if state["done"]:
                break
        got = state["out"].masked_fill(state["steps"] > state["ends"][:, None], spec.PAD)
        assert torch.equal(got, want)


def test_its_recording_shows_a_host_ten_times_longer_than_the_gpu():
    """What the story asks the learner to find (recorded on an H200, MEASUREMENTS.md): the search, not the GPU, is
    the long side: 35 ms of host a call against 2.4 ms of kernels."""
    recorded = ProfileMetrics.from_json((PUZZLE.recordings_dir / "baseline_metrics.json").read_text()).values
    assert recorded["cpu.time_per_iter_us"] > 10 * recorded["gpu.time_per_iter_us"]
    assert recorded["gpu.busy_fraction"] < 0.1 and recorded["sync.calls_per_iter"] >= SPEC.STEPS // 4


@pytest.mark.gpu
@pytest.mark.parametrize("workload", ["solution/workload.py", "alternatives/overlapped_host.py"])
def test_the_gpu_styles_decode_as_the_judge_wants(workload):
    other = module(workload)
    state = BASELINE.prepare(SPEC.make_weights(3, "cuda"), "cuda")
    mine = other.prepare(SPEC.make_weights(3, "cuda"), "cuda")
    for seed in (4, 5):  # twice: the second call starts from the state the first left
        prompts = SPEC.make_input(seed, "cuda")
        rel = judged(state, prompts, other.forward(mine, prompts))
        print(workload, f"judged {rel:.2e}")
        assert rel == 0.0


def test_only_a_step_that_runs_the_mlp_finds_the_next_token(full):
    """A step that skipped the MLP (the embedding against the output projection) would pick neither of the two
    next tokens: dropping the model's work cannot pass for the same decoding."""
    state, _, _ = full
    tokens = SPEC.ORDER[:512]
    nexts = SPEC.ORDER[(torch.arange(512)[:, None] + torch.tensor(SPEC.STRIDES)) % SPEC.VOCAB]
    chosen, _ = BASELINE.step(state, tokens, torch.zeros(len(tokens), SPEC.MEMORY))
    assert (chosen[:, None] == nexts).any(1).all()
    skipped = (state["embed"][tokens].float() @ state["out"].float().T).argmax(-1)
    assert (skipped[:, None] == nexts).any(1).float().mean() < 0.01
