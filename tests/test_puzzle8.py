"""puzzle8, The stop words read between the steps, as far as the CPU can check it: a word is a stop word exactly
when its token is one (what the set lookup and the GPU table rely on); every sequence meets its stop word and the
batch ends mid-way; greedy choices never hang on rounding, and the memory never changes one; the memory makes
every score depend on the prompt drawn at grade time and every step before it, so no table built in prepare()
answers a call; a sequence stopped a step late misses the tolerance; the host-run styles and the reference's
steps run eagerly give the baseline's scores. Its scene was redesigned (issue 37: the tokens follow a public ring,
so they were answerable by table), measured on an H200 and on an H100, where it ships (MEASUREMENTS.md).
"""

from __future__ import annotations

import pytest
import torch

from conftest import decode_with_memory, memory_unread, puzzle_file, relative_l2
from tutor.catalog import get_puzzle
from tutor.metrics import ProfileMetrics

pytestmark = pytest.mark.bf16_products_exact  # its scene's bf16 products, sooner (tests/conftest.py)

PUZZLE = get_puzzle("puzzle8")
TOLERANCE = PUZZLE.correctness.max_rel_l2
NARROW = {"HIDDEN": 256, "FFN": 1024}  # a quarter of the width: the same ring, words and prompts, a CPU's share


def module(relative: str, sizes: dict | None = None):
    return puzzle_file(PUZZLE, relative, sizes)


SPEC = module("spec.py")


@pytest.fixture(scope="module")
def full_weights() -> dict:
    return SPEC.make_weights(5, "cpu")


def stop_steps(spec, prompts: torch.Tensor) -> torch.Tensor:
    """The step at which each sequence emits its stop word, from its start token's place on the ring."""
    positions = torch.argsort(spec.ORDER)[prompts[:, -1]]
    return spec.STOP_EVERY - 2 - positions % spec.STOP_EVERY


def test_a_word_is_a_stop_word_exactly_when_its_token_is_a_stop_token():
    """What the reference relies on: the search over whole words finds a stop word only as a whole token."""
    baseline = module("baseline.py")
    stop = baseline.prepare({"stop_words": SPEC.STOP_WORDS}, "cpu")["stop"]
    assert len(set(SPEC.WORDS)) == SPEC.VOCAB and len(SPEC.STOP_WORDS) == SPEC.VOCAB // SPEC.STOP_EVERY
    stops = set(SPEC.STOP_WORDS)
    assert all(bool(stop.search(" a1 " + word)) == (word in stops) for word in SPEC.WORDS)
    assert not stop.search(" " + " ".join(w for w in SPEC.WORDS[:300] if w not in stops))  # no stop across words


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_every_sequence_meets_its_stop_word_and_the_batch_ends_mid_way(seed):
    prompts = SPEC.make_input(seed, "cpu")
    assert prompts.shape == (SPEC.BATCH, SPEC.PROMPT) and prompts.dtype == torch.long
    ends = stop_steps(SPEC, prompts)
    assert int(ends.min()) >= 0 and SPEC.STEPS // 4 <= int(ends.max()) <= 3 * SPEC.STEPS // 4
    positions = torch.argsort(SPEC.ORDER)[prompts[:, -1]]
    assert len(set((positions // SPEC.STOP_EVERY).tolist())) == SPEC.BATCH  # no two share a stretch of the ring


def test_greedy_choices_do_not_hang_on_rounding(full_weights):
    """At the real width, in float32 with the memory read back, the successor leads the runner-up by hundreds;
    the bf16 step chooses the same."""
    baseline = module("baseline.py")
    weights, prompts = full_weights, SPEC.make_input(11, "cpu")
    wide = {k: v.float() for k, v in weights.items() if isinstance(v, torch.Tensor)}
    memory, tokens = torch.zeros(SPEC.BATCH, SPEC.MEMORY), prompts[:, -1]
    for j in range(SPEC.PROMPT - 1):
        _, _, memory = baseline.step(weights, prompts[:, j], memory)
    for _ in range(4):
        h = wide["embed"][tokens] + (memory @ wide["mix"])[:, :SPEC.HIDDEN]
        logits = (h + torch.relu(h @ wide["w1"].T) @ wide["w2"].T) @ wide["out"].T
        top2 = logits.topk(2).values
        assert (top2[:, 0] - top2[:, 1] > 200).all()
        chosen, _, memory = baseline.step(weights, tokens, memory)
        assert torch.equal(chosen, logits.argmax(-1))
        tokens = chosen


@pytest.fixture(scope="module")
def narrow():
    """The scene at a quarter of its width: its spec, baseline, weights, an input and the baseline's scores."""
    spec, baseline = module("spec.py", NARROW), module("baseline.py", NARROW)
    weights, prompts = spec.make_weights(9, "cpu"), spec.make_input(3, "cpu")
    expected = baseline.forward(baseline.prepare(weights, "cpu"), prompts)
    return spec, baseline, weights, prompts, expected


def test_each_sequence_scores_up_to_its_stop_word_and_nothing_after(narrow):
    spec, _, _, prompts, expected = narrow
    assert expected.shape == (spec.BATCH, spec.STEPS) and expected.dtype == torch.float32
    assert torch.equal((expected != 0).sum(1), stop_steps(spec, prompts) + 1)
    assert float(expected[expected != 0].min()) > 0.2  # every score a whole one: 1 plus a read-out of tanh's


def test_the_memory_never_changes_a_choice(narrow):
    """Tokens with the memory read back are the tokens without it: the ring decides, as spec.ORDER says."""
    spec, baseline, weights, prompts, _ = narrow
    unread = memory_unread(spec, weights)
    tokens, _ = decode_with_memory(spec, baseline, weights, prompts, steps=40)
    assert torch.equal(tokens, decode_with_memory(spec, baseline, unread, prompts, steps=40)[0])
    ring = torch.argsort(spec.ORDER)
    assert torch.equal(ring[tokens[:, 0]], (ring[prompts[:, -1]] + 1) % spec.VOCAB)


def test_no_table_answers_a_call(narrow):
    """What a table built in prepare() could hold misses by far more than the tolerance: the scores of a memory
    that never read the prompt (each start token's decode, tabulated: cheats/tabulates_the_ring does it), and
    scores that skip the memory (1 for every token up to its stop word)."""
    spec, baseline, weights, prompts, expected = narrow
    _, scores = decode_with_memory(spec, baseline, weights, prompts, steps=spec.STEPS)
    _, unprompted = decode_with_memory(spec, baseline, weights, prompts, steps=spec.STEPS, read_prompt=False)
    live = expected != 0
    assert relative_l2(unprompted * live, expected) > 5 * TOLERANCE
    assert relative_l2(live.float(), expected) > 5 * TOLERANCE
    assert torch.equal(scores * live, expected)


def test_a_sequence_stopped_a_step_late_or_early_misses_the_tolerance(narrow):
    """Every sequence's stop matters: one score more, or one fewer, in one sequence of 64 reads outside it."""
    spec, baseline, weights, prompts, expected = narrow
    _, scores = decode_with_memory(spec, baseline, weights, prompts, steps=spec.STEPS)
    ends = stop_steps(spec, prompts)
    for b in (int(ends.argmin()), int(ends.argmax())):
        late, early = expected.clone(), expected.clone()
        late[b, ends[b] + 1] = scores[b, ends[b] + 1]
        early[b, ends[b]] = 0
        assert relative_l2(late, expected) > 2 * TOLERANCE and relative_l2(early, expected) > 2 * TOLERANCE


def test_an_honest_order_of_sums_stays_well_inside_the_tolerance(narrow):
    """Every step in float32 instead of bf16 (a larger difference than any honest kernel's order of sums makes):
    the scores move by under a tenth of the tolerance puzzle.toml sets."""
    spec, baseline, weights, prompts, expected = narrow
    wide = {k: (v.float() if isinstance(v, torch.Tensor) else v) for k, v in weights.items()}
    step = baseline.step

    def wide_step(w, tokens, memory):
        mixed = memory @ w["mix"]
        h = w["embed"][tokens] + mixed[:, :spec.HIDDEN]
        h = h + torch.relu(h @ w["w1"].T) @ w["w2"].T
        memory = torch.tanh(mixed[:, spec.HIDDEN:] + h @ w["write"])
        return (h @ w["out"].T).argmax(dim=-1), 1 + memory @ w["gate"], memory

    baseline.step = wide_step
    try:
        wide_out = baseline.forward(baseline.prepare(wide, "cpu"), prompts)
    finally:
        baseline.step = step
    assert 0 < relative_l2(wide_out, expected) < TOLERANCE / 10


@pytest.mark.parametrize("workload", ["alternatives/decode_then_detokenize.py", "alternatives/stop_set.py",
                                      "alternatives/stop_table_eager.py"])
def test_the_host_runnable_styles_give_the_baselines_scores(workload, narrow):
    _, _, weights, prompts, expected = narrow
    other = module(workload, {"HIDDEN": NARROW["HIDDEN"]})
    assert torch.equal(other.forward(other.prepare(weights, "cpu"), prompts), expected)


def test_the_references_graphed_parts_give_the_baselines_scores_eagerly(narrow):
    """The prompt's read and the chunks the reference captures, run eagerly on the CPU as its forward() replays
    them, on a state the call before (a longer one) left: the baseline's scores, zeros past each stop included."""
    spec, baseline, weights, longest, expected = narrow
    reference = module("solution/workload.py", {"HIDDEN": NARROW["HIDDEN"]})
    state = {"w": weights, "is_stop": torch.zeros(spec.VOCAB, dtype=torch.bool),
             "prompts": torch.zeros(spec.BATCH, spec.PROMPT, dtype=torch.long),
             "tokens": torch.zeros(spec.BATCH, dtype=torch.long), "memory": torch.zeros(spec.BATCH, spec.MEMORY),
             "out": torch.zeros(spec.BATCH, spec.STEPS), "ends": torch.zeros(spec.BATCH, dtype=torch.long),
             "done": torch.zeros((), dtype=torch.bool), "steps": torch.arange(spec.STEPS)}
    index = {word: t for t, word in enumerate(weights["words"])}
    state["is_stop"][[index[word] for word in weights["stop_words"]]] = True
    shortest = min((spec.make_input(seed, "cpu") for seed in range(4, 8)), key=lambda p: int(stop_steps(spec, p).max()))
    assert stop_steps(spec, shortest).max() < stop_steps(spec, longest).max()
    wanted = [expected, baseline.forward(baseline.prepare(weights, "cpu"), shortest)]
    for prompts, want in zip((longest, shortest), wanted):  # a longer call, then a shorter one
        state["prompts"].copy_(prompts)
        state["out"].zero_()
        reference.read_prompt(state)
        for start in range(0, spec.STEPS, reference.CHUNK):
            reference.chunk(state, start)
            if state["done"]:
                break
        got = state["out"].masked_fill(state["steps"] > state["ends"][:, None], 0.0)
        assert torch.equal(got, want)


def test_its_recording_shows_a_host_ten_times_longer_than_the_gpu():
    """What the story asks the learner to find (recorded on an H200, MEASUREMENTS.md): the search, not the GPU, is
    the long side: 35 ms of host a call against 2.4 ms of kernels."""
    recorded = ProfileMetrics.from_json((PUZZLE.recordings_dir / "baseline_metrics.json").read_text()).values
    assert recorded["cpu.time_per_iter_us"] > 10 * recorded["gpu.time_per_iter_us"]
    assert recorded["gpu.busy_fraction"] < 0.1 and recorded["sync.calls_per_iter"] >= SPEC.STEPS // 4


@pytest.mark.gpu
@pytest.mark.parametrize("workload", ["solution/workload.py", "alternatives/overlapped_host.py"])
def test_the_gpu_styles_give_the_baselines_scores(workload):
    baseline, other = module("baseline.py"), module(workload)
    weights = SPEC.make_weights(3, "cuda")
    mine, theirs = other.prepare(weights, "cuda"), baseline.prepare(weights, "cuda")
    for seed in (4, 5):  # twice: the second call starts from the state the first left
        prompts = SPEC.make_input(seed, "cuda")
        rel = relative_l2(other.forward(mine, prompts), baseline.forward(theirs, prompts))
        print(workload, f"relative L2 {rel:.2e}")
        assert rel < TOLERANCE / 10


def test_only_a_step_that_runs_the_mlp_finds_the_next_token(full_weights):
    """A step that skipped the MLP (the embedding against the output projection) would pick other tokens:
    dropping the model's work cannot pass for the same decoding."""
    weights = full_weights
    tokens, successors = SPEC.ORDER[:512], SPEC.ORDER[1:513]
    chosen, _, _ = module("baseline.py").step(weights, tokens, torch.zeros(len(tokens), SPEC.MEMORY))
    assert torch.equal(chosen, successors)
    skipped = (weights["embed"][tokens].float() @ weights["out"].float().T).argmax(-1)
    assert (skipped == successors).float().mean() < 0.01
