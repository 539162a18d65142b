"""puzzle2's parts that run without a GPU: warm-up over the spec's own inputs, the memory mode, the grader.

The grader is checked on memory figures recorded on an H200 (tests/fixtures/puzzle2_memory.json,
written by `benchmarks/memory_run.py puzzle2 --json`: each workload alone in a fresh process, serving every
warm-up input twice, the baseline, the reference and every honest alternative).
"""

from __future__ import annotations

import json
import textwrap
from pathlib import Path

import pytest

from conftest import recording
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
    # Each process that loads it notes what it was fed, in a file of its own, after every call.
    (folder / "mine.py").write_text(textwrap.dedent(COUNTING).replace("    return torch.cat", (
        f"    open({str(folder)!r} + f'/seen-{{__import__(\"os\").getpid()}}.json', 'w')"
        ".write(__import__('json').dumps(seen))\n    return torch.cat")))
    return {"mode": mode, "device": "cpu", "seed": 5, "spec": str(folder / "spec.py"),
            "workloads": {"mine": str(folder / "mine.py")}, "prepare": ["mine"], "time": ["mine"],
            "candidate": "mine", "oracle": "mine", "correctness": {"checks": 1},
            "timing": {"warmup": 1, "rounds": 2}}


def seen_per_process(folder: Path) -> list[dict]:
    return [json.loads(path.read_text()) for path in sorted(folder.glob("seen-*.json"))]


def test_warmup_serves_every_input_the_spec_lists(tmp_path):
    run_harness(request_for(tmp_path, "check"), tmp_path / "run", 120)
    # mine is the candidate (its own process) and the oracle (the ruler's): each process warms up on
    # sizes 1, 3, 5 once each (3 inputs > 1 warm-up round), then runs size 2: one check, then every call of
    # 2 rounds (4-6 each), timed in the candidate's process, run untimed in the ruler's to check each one.
    seen = seen_per_process(tmp_path / "p")
    assert [{k: v for k, v in s.items() if k != "2"} for s in seen] == [{"1": 1, "3": 1, "5": 1}] * 2
    assert seen[0]["2"] == seen[1]["2"] and 1 + 2 * 4 <= seen[0]["2"] <= 1 + 2 * 6


def test_memory_run_serves_every_warmup_input_twice(tmp_path):
    outcome = run_harness(request_for(tmp_path, "memory"), tmp_path / "run", 120)
    assert outcome.result["workload"] == "mine" and outcome.result["memory"] == {}  # no GPU: no figures
    assert seen_per_process(tmp_path / "p") == [{"1": 2, "3": 2, "5": 2}]


def test_puzzle2_has_its_grader():
    assert get_puzzle("puzzle2").grader == "puzzle2"


def recorded() -> dict:
    """Each workload's memory figures in a fresh process serving every warm-up input twice, recorded on an
    H200 lent when no H100 was (`python benchmarks/memory_run.py puzzle2 --json ...`, 2026-11-25; the
    allocator's figures do not depend on which Hopper part runs them)."""
    return json.loads((FIXTURES / "puzzle2_memory.json").read_text())


def test_grader_names_the_baselines_weight_copies():
    memory = recorded()["baseline"]
    [criterion] = puzzle2.criteria(get_puzzle("puzzle2"), {"memory": {"candidate": memory}})
    print(criterion.summary, memory["graph_pool_mb_by_warmup"])
    assert not criterion.passed and criterion.summary.startswith(
        f"Your graph pools hold {memory['graph_pool_mb']:.0f} MB, as much as the model's 128 MB of weights")


HONEST = ["reference", *(f"alternatives/{name}" for name in get_puzzle("puzzle2").alternatives)]


@pytest.mark.parametrize("workload", HONEST)
def test_grader_passes_every_honest_solutions_recorded_memory(workload):
    memory = recorded()[workload]
    [criterion] = puzzle2.criteria(get_puzzle("puzzle2"), {"memory": {"candidate": memory}})
    assert criterion.passed, (criterion.summary, criterion.details)


def test_a_pool_per_graph_and_growth_per_size_are_named():
    # A graph per size, each in its own pool, all captured in prepare(): flat during warm-up.
    memory = {"graph_pool_mb": 120.0, "graph_pools": 64,
              "graph_pool_mb_by_warmup": [120.0] * 16}
    faults = puzzle2.find_faults(memory)
    assert [f.split(":")[0] for f in faults] == ["Your graphs use 64 separate pools"]
    # A graph per size recorded on each size's second sighting, in one pool that keeps every graph's activations.
    lazily = {**memory, "graph_pools": 1, "graph_pool_mb_by_warmup": [0.0] * 8 + [15.0 * (i + 1) for i in range(8)]}
    [growth] = puzzle2.find_faults(lazily)
    assert growth.startswith("Your graph pools grow by 1.9 MB with every new batch size served")


def test_grader_without_memory_figures_says_so():
    [criterion] = puzzle2.criteria(get_puzzle("puzzle2"), {"memory": {}})
    assert not criterion.passed and "no GPU memory figures" in criterion.summary


# The baseline's own `profile puzzle2` on the H100 (benchmarks/device_puzzle.sh puzzle2): its trace, and the
# memory figures the harness reported beside it (in the metrics it computed there).
@pytest.fixture(scope="module")
def baseline_profile():
    from tutor.profilers.torch_trace import MEMORY_METRICS, extract

    recorded = json.loads((recording("puzzle2", "metrics.json")).read_text())["values"]
    memory = {raw: recorded[metric] for raw, metric in MEMORY_METRICS.items() if metric in recorded}
    return extract(recording("puzzle2", "trace.json.gz"), memory)


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
