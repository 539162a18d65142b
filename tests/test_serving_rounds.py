"""A serving grade's rounds, run for real on the CPU (tutor.harness.serving_rounds): two servers in their own
processes replay one trace of requests in pairs, each submit and step a message from the coordinator, which
stamps the tokens; every request's tokens are checked against the oracle's in the same pair.

The toy model's next token is a successor table's entry for the last one, found by a real matmul of the
batch (one row a live request, padded rows too): which server batches how changes the time, never a token.
No speed is asserted here (CI's two cores are busy): the replay's figures are the harness's own stamps,
and tests/test_serving.py checks their arithmetic on a virtual clock.
"""

from __future__ import annotations

import textwrap
from pathlib import Path

import pytest

from tutor.runner import RunFailed, run_harness

SPEC = """
import torch

VOCAB = 64


def make_weights(seed, device):
    g = torch.Generator().manual_seed(seed)
    successor = torch.randperm(VOCAB, generator=g)
    return {"onehot": torch.eye(VOCAB)[successor].to(device)}  # row t is the one-hot of t's successor


def make_trace(seed):
    g = torch.Generator().manual_seed(seed)
    lengths = [1 + int(n) for n in torch.randint(0, 12, (10,), generator=g)]
    lengths[3] = 40  # one long request: a static batch waits on it
    return [{"rid": i, "arrival_s": 0.002 * i, "prompt": [int(torch.randint(VOCAB, (1,), generator=g))],
             "max_new": n} for i, n in enumerate(lengths)]
"""

STEP = """
import torch


def next_tokens(state, last):
    # one matmul for the whole batch: each row's argmax is its token's successor
    return (torch.nn.functional.one_hot(torch.tensor(last), 64).float() @ state["onehot"]).argmax(1).tolist()
"""

STATIC = STEP + """

def prepare(weights, device):
    return weights


class Static:
    # Waits for the batch in flight to finish entirely, then takes everything queued: short requests wait on
    # the longest, and finished rows still run (padded) until it is done.
    def __init__(self, state):
        self.state, self.queue, self.batch = state, [], []

    def submit(self, rid, prompt, max_new):
        self.queue.append([rid, prompt[-1], max_new])

    def step(self):
        if not self.batch:
            self.batch, self.queue = self.queue, []
        if not self.batch:
            return {}
        tokens = next_tokens(self.state, [r[1] for r in self.batch])
        out = {}
        for r, t in zip(self.batch, tokens):
            if r[2] > 0:
                out[r[0]] = [t]
                r[1], r[2] = t, r[2] - 1
        if all(r[2] == 0 for r in self.batch):
            self.batch = []
        return out


def server(state):
    return Static(state)
"""

CONTINUOUS = STEP + """

def prepare(weights, device):
    return weights


class Continuous:
    # Every step takes what has come and drops what has finished.
    def __init__(self, state):
        self.state, self.live = state, []

    def submit(self, rid, prompt, max_new):
        self.live.append([rid, prompt[-1], max_new])

    def step(self):
        if not self.live:
            return {}
        tokens = next_tokens(self.state, [r[1] for r in self.live])
        out = {}
        for r, t in zip(self.live, tokens):
            out[r[0]] = [t]
            r[1], r[2] = t, r[2] - 1
        self.live = [r for r in self.live if r[2] > 0]
        return out


def server(state):
    return Continuous(state)
"""


def serving_request(tmp_path, mine: str, replays: int = 2) -> dict:
    folder = tmp_path / "puzzle"
    folder.mkdir()
    paths = {}
    for name, source in (("spec", SPEC), ("baseline", STATIC), ("mine", mine)):
        (folder / f"{name}.py").write_text(textwrap.dedent(source))
        paths[name] = str(folder / f"{name}.py")
    spec = paths.pop("spec")
    return {"mode": "serving", "device": "cpu", "seed": 1234, "spec": spec, "workloads": paths,
            "prepare": list(paths), "time": list(paths), "candidate": "mine", "oracle": "baseline",
            "serving": {"replays": replays, "limit_s": 60}}


def test_a_continuous_server_replays_the_trace_beside_the_static_one_with_the_same_tokens(tmp_path):
    result = run_harness(serving_request(tmp_path, CONTINUOUS), tmp_path / "run", 240).result
    assert result["mismatches"] == 0 and result["violations"] == []
    assert result["requests_checked"] == 3 * 10  # the warm-up pair's requests are checked too
    assert len(result["pairs"]) == 2  # the warm-up pair is not counted
    for baseline, mine in result["pairs"]:
        for figures in (baseline, mine):
            assert figures["requests"] == 10 and figures["tokens"] == baseline["tokens"]
            assert 0 < figures["latency_p50_s"] <= figures["latency_p99_s"] <= figures["makespan_s"]


def test_a_server_whose_tokens_part_from_the_oracles_is_named_with_where(tmp_path):
    off_by_one = CONTINUOUS.replace("out[r[0]] = [t]", "out[r[0]] = [t if r[0] != 3 or r[2] > 5 else t + 1]")
    result = run_harness(serving_request(tmp_path, off_by_one, replays=1), tmp_path / "run", 240).result
    assert result["mismatches"] == 2  # request 3 in each of the two pairs
    [first, *_] = result["mismatched"]
    assert first["rid"] == 3 and first["at"] == 35 and first["got"][0] == first["expected"][0] + 1


@pytest.mark.parametrize("step, words", [
    ("return [1, 2]", "returned list, not a dict of {request id: [new tokens]}"),
    ("return {0: 'seven'}", "gave request 0 str, not a list of token ids"),
])
def test_a_step_that_returns_something_else_is_refused_in_words(tmp_path, step, words):
    broken = CONTINUOUS.replace("    def step(self):\n", f"    def step(self):\n        {step}\n")
    with pytest.raises(RunFailed) as info:
        run_harness(serving_request(tmp_path, broken, replays=1), tmp_path / "run", 240)
    assert info.value.kind == "workload_error" and words in info.value.message


def test_a_server_that_never_finishes_a_request_meets_the_replays_limit(tmp_path):
    stalled = CONTINUOUS.replace("self.live = [r for r in self.live if r[2] > 0]", "self.live = []")
    request = serving_request(tmp_path, stalled, replays=1)
    with pytest.raises(RunFailed) as info:
        run_harness(request, tmp_path / "run", 240)
    assert info.value.kind == "crashed" and "returned no tokens 1000 times" in info.value.message


def with_logits(source: str, line: str, scale: float = 1.0) -> str:
    """A toy server that gives each token with a logit (a function of the token, `scale` times it)."""
    assert line in source
    return source.replace(line, line.replace("[t]", f"[(t, (t / 7 + 1) * {scale})]"))


def replayed_asking_for_logits(tmp_path, mine: str, oracle_gives_logits: bool = True) -> dict:
    """One replay pair of the toy puzzle with [serving] logits on: `mine` against the static oracle, which gives its
    tokens with their logits unless told not to."""
    request = serving_request(tmp_path, mine, replays=1)
    if oracle_gives_logits:
        baseline = Path(request["workloads"]["baseline"])
        baseline.write_text(with_logits(baseline.read_text(), "                out[r[0]] = [t]"))
    request["serving"]["logits"] = True
    return run_harness(request, tmp_path / "run", 240).result


@pytest.mark.parametrize("scale, refused", [(1.0, False), (1.01, True)])
def test_where_a_puzzle_asks_for_logits_each_tokens_logit_is_checked_against_the_oracles(tmp_path, scale, refused):
    """Issue 37: a server's tokens could come from somewhere else than its model, its logits could not. With
    [serving] logits, every token comes as a (token, logit) pair and each replay's logits are compared with the
    oracle's: the same give a relative L2 error of 0, 1% off gives 1e-2, against the puzzle's tolerance."""
    from tutor.grading.serving import check_serving_correctness

    result = replayed_asking_for_logits(tmp_path, with_logits(CONTINUOUS, "out[r[0]] = [t]", scale))
    logits = result["logits"]
    assert result["mismatches"] == 0 and logits["missing"] == 0 and logits["tokens"] > 2 * 40
    assert logits["rel_l2"] == pytest.approx(scale - 1, abs=1e-9)
    assert check_serving_correctness(result, 5e-3).passed is not refused


def test_where_a_puzzle_asks_for_logits_a_token_without_one_is_named(tmp_path):
    from tutor.grading.serving import check_serving_correctness

    verdict = check_serving_correctness(replayed_asking_for_logits(tmp_path, CONTINUOUS), 5e-3)
    assert not verdict.passed and "came without their logit" in verdict.summary


def test_where_a_puzzle_asks_for_logits_and_its_own_server_gives_none_the_puzzle_is_named(tmp_path):
    """A puzzle whose oracle server gives no logits cannot hold a learner's to them: the verdict says the puzzle is
    at fault, not the learner, instead of passing logits it never compared."""
    from tutor.grading.serving import check_serving_correctness

    result = replayed_asking_for_logits(tmp_path, with_logits(CONTINUOUS, "out[r[0]] = [t]"), oracle_gives_logits=False)
    assert result["logits"]["oracle_missing"] > 0 and result["logits"]["tokens"] == 0
    verdict = check_serving_correctness(result, 5e-3)
    assert not verdict.passed and "the puzzle is broken" in verdict.summary


def drawn(source: str, indent: str) -> str:
    """A toy server whose each token is its model's choice moved by the harness's draw for it."""
    line = f"{indent}out[r[0]] = [t]\n"
    assert line in source
    return source.replace("    def step(self):\n", "    def step(self, draws):\n").replace(
        line, f"{indent}t = (t + draws[r[0]]) % 64\n{line}")


@pytest.mark.parametrize("follows_draws", [True, False])
def test_where_a_puzzle_draws_each_token_both_servers_of_a_pair_get_the_same_draws(tmp_path, follows_draws):
    """Issue 76: with [serving] draws, step() gets a draw for each live request's next token, made in the
    coordinator once the token before came back: the two servers of a pair get the same ones (their tokens agree),
    and a server that does not use them parts from the oracle."""
    mine = drawn(CONTINUOUS, " " * 12) if follows_draws else CONTINUOUS.replace(
        "    def step(self):\n", "    def step(self, draws):\n")
    request = serving_request(tmp_path, mine, replays=1)
    baseline = Path(request["workloads"]["baseline"])
    baseline.write_text(drawn(baseline.read_text(), " " * 16))
    request["serving"]["draws"] = 8
    result = run_harness(request, tmp_path / "run", 240).result
    assert result["violations"] == []
    if follows_draws:
        assert result["mismatches"] == 0
    else:  # 10 requests, 1 to 40 tokens each, a draw of 0 one time in 8: each pair's requests nearly all part
        assert result["mismatches"] >= 10
