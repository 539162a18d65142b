"""puzzle2's parts that run without a GPU: warm-up over the spec's own inputs, the memory run, the grader.

The grader is checked on memory figures recorded on the H100 (tests/fixtures/h100_puzzle2_memory.json,
written by `benchmarks/device_puzzle.sh puzzle2 --memory`: each workload's own memory run).
"""

from __future__ import annotations

import json
import textwrap
from pathlib import Path

import pytest

from graders import puzzle2
from tutor.catalog import get_puzzle
from tutor.runner import run_harness

FIXTURES = Path(__file__).parent / "fixtures"

# Counts the calls per input shape, so the test sees exactly what warm-up and serving fed it.
COUNTING = """
import collections
import torch
seen = collections.Counter()
def prepare(weights, device):
    return weights
def forward(state, xs):
    for x in xs:
        seen[x.shape[0]] += 1
    return torch.cat(xs) * state["w"][0]
"""
SPEC_WITH_WARMUP = """
import torch
def make_weights(seed, device):
    return {"w": torch.ones(4)}
def make_input(seed, device):
    return [torch.ones(2, 4)]
def warmup_inputs(seed, device):
    return [[torch.ones(bs, 4)] for bs in (1, 3, 5)]
"""


def request_for(tmp_path, mode: str) -> dict:
    folder = tmp_path / "p"
    folder.mkdir(exist_ok=True)
    (folder / "spec.py").write_text(textwrap.dedent(SPEC_WITH_WARMUP))
    (folder / "mine.py").write_text(textwrap.dedent(COUNTING) + "\nimport atexit\natexit.register("
                                    f"lambda: open({str(folder / 'seen.json')!r}, 'w').write(__import__('json').dumps(seen)))\n")
    return {"mode": mode, "device": "cpu", "seed": 5, "spec": str(folder / "spec.py"),
            "workloads": {"mine": str(folder / "mine.py")}, "prepare": ["mine"], "time": ["mine"],
            "candidate": "mine", "oracle": "mine", "correctness": {"checks": 1},
            "timing": {"warmup": 1, "rounds": 2}}


def test_warmup_serves_every_input_the_spec_lists(tmp_path):
    run_harness(request_for(tmp_path, "check"), tmp_path / "run", 120)
    seen = json.loads((tmp_path / "p" / "seen.json").read_text())
    # warm-up: sizes 1, 3, 5 once each (3 inputs > 1 warm-up round); then checks and rounds at size 2
    assert {k: seen[k] for k in ("1", "3", "5")} == {"1": 1, "3": 1, "5": 1}
    # one check runs mine as candidate and as oracle; then 2 timed rounds, each one's output checked
    # against an untimed oracle call (mine again) on the same input
    assert seen["2"] == 1 * 2 + 2 * 2


def test_memory_run_serves_every_warmup_input_twice(tmp_path):
    outcome = run_harness(request_for(tmp_path, "memory"), tmp_path / "run", 120)
    assert outcome.result["workload"] == "mine" and outcome.result["memory"] == {}  # no GPU: no figures
    seen = json.loads((tmp_path / "p" / "seen.json").read_text())
    assert seen == {"1": 2, "3": 2, "5": 2}


def test_puzzle2_asks_for_a_memory_run_and_its_grader():
    puzzle = get_puzzle("puzzle2")
    assert puzzle.memory_run and puzzle.grader == "puzzle2"
    assert not get_puzzle("puzzle1").memory_run


def recorded() -> dict:
    path = FIXTURES / "h100_puzzle2_memory.json"
    if not path.exists():
        pytest.skip("no H100 memory fixture recorded yet")
    return json.loads(path.read_text())


def test_grader_fails_the_baselines_recorded_graph_memory():
    memory = recorded()["baseline"]
    [criterion] = puzzle2.criteria(get_puzzle("puzzle2"), {"memory_run": memory})
    assert not criterion.passed
    assert memory["graph_pool_mb"] > puzzle2.MAX_GRAPH_POOL_MB
    assert f"{memory['graph_pool_mb']:.0f} MB" in criterion.summary


def test_grader_passes_the_references_recorded_graph_memory():
    memory = recorded()["reference"]
    [criterion] = puzzle2.criteria(get_puzzle("puzzle2"), {"memory_run": memory})
    assert criterion.passed, criterion.details
    assert any("graphs captured" in d for d in criterion.details)


def test_grader_without_memory_figures_says_so():
    [criterion] = puzzle2.criteria(get_puzzle("puzzle2"), {"memory_run": {}})
    assert not criterion.passed and "no GPU memory figures" in criterion.summary


# The baseline's own `profile puzzle2` on the H100 (benchmarks/device_puzzle.sh puzzle2): its trace, and the
# memory figures the harness reported beside it (in the metrics it computed there).
@pytest.fixture(scope="module")
def baseline_profile():
    from tutor.profilers.torch_trace import MEMORY_METRICS, extract

    recorded = json.loads((FIXTURES / "h100_puzzle2_baseline_metrics.json").read_text())["values"]
    memory = {raw: recorded[metric] for raw, metric in MEMORY_METRICS.items() if metric in recorded}
    return extract(FIXTURES / "h100_puzzle2_baseline_trace.json.gz", memory)


def test_baseline_profile_shows_graph_replays_and_their_memory(baseline_profile):
    v = baseline_profile.values
    assert v["graphs.replays_per_iter"] == 8  # one graph replay per decode step
    assert v["memory.graph_pool_mb"] > 128  # the pool holds more than the model's 128 MB of weights
    assert v["graphs.captured"] >= 8 and v["compile.graphs"] >= 2  # a recompile for dynamic shapes


def test_baseline_profile_shows_the_weights_copied_every_step(baseline_profile):
    # cudagraph trees refill their static inputs (the 16 weight tensors) with _foreach_copy_ each replay.
    foreach = [k for k in baseline_profile.kernels if "multi_tensor_apply" in k["name"]]
    assert foreach and foreach[0]["category"] == "elementwise"
    assert foreach[0]["share"] > 0.3
    assert baseline_profile.values["kernels.category.elementwise.share"] > 0.3
