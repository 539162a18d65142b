"""puzzle22, Fast at the benchmark's batch size, as far as the CPU can check it: dynamo's own guards, run on the
CPU with a backend that counts graphs and the steps they serve, compile the baseline eight times and then leave most
batch sizes to run eagerly, while the reference and the padded buckets serve every size compiled; every style's
log-probabilities match float64's far inside the tolerance and a blank step does not; the floor's rows hold for the
median call; its H100 recording shows the limit hit, and the H100's grades read the tiers puzzle.toml sets
(MEASUREMENTS.md).
"""

from __future__ import annotations

import json
import statistics
from pathlib import Path

import pytest
import torch

from conftest import puzzle_file, relative_l2
from tutor.catalog import all_puzzles, get_puzzle
from tutor.metrics import ProfileMetrics
from tutor.grading.performance import tier_reached
from tutor.stats import Estimate

PUZZLE = get_puzzle("puzzle22")
SMALL = {"VOCAB": 512}  # the spec's scene with a narrower vocabulary: the batch sizes, and so the guards, as they are
STYLES = ["baseline.py", "solution/workload.py", "alternatives/padded_buckets.py"]  # torch's ops: the CPU runs them


class CountingBackend:
    """A torch.compile backend that runs dynamo's graph as it is, counting the graphs compiled and the steps run."""

    def __init__(self) -> None:
        self.graphs, self.compiled_steps = 0, 0

    def __call__(self, graph_module, example_inputs):
        self.graphs += 1

        def run(*args):
            self.compiled_steps += 1
            return graph_module(*args)
        return run


@pytest.fixture
def counted(monkeypatch):
    """torch.compile, for the workloads loaded while it is in use, with the counting backend and the workload's own
    other arguments (dynamic=False stays dynamic=False); dynamo's caches emptied before and after."""
    import torch._dynamo

    backend, compile_ = CountingBackend(), torch.compile
    monkeypatch.setattr(torch, "compile", lambda fn, **kwargs: compile_(fn, **kwargs, backend=backend))
    torch._dynamo.reset()
    yield backend
    torch._dynamo.reset()


def served(workload: str, spec, seed: int = 0) -> list[tuple[torch.Tensor, torch.Tensor]]:
    """The warm-up's inputs, every batch size once, served through `workload`; its outputs and the steps."""
    module = puzzle_file(PUZZLE, workload, SMALL)
    state = module.prepare(spec.make_weights(seed, "cpu"), "cpu")
    return [(module.forward(state, steps), steps) for steps in spec.warmup_inputs(seed, "cpu")]


def test_its_h100_recording_shows_the_eight_graphs_and_the_limit_hit():
    """What the hints ask the learner to find in study mode: the baseline's profile on the H100 counts the recompile
    limit's eight graphs and the limit hit once, and a step's kernels are mostly eager ones."""
    assert not PUZZLE.draft and "puzzle22" in all_puzzles()  # it ships: tests/test_dev_check.py checks its folder
    recorded = ProfileMetrics.from_json((PUZZLE.recordings_dir / "baseline_metrics.json").read_text())
    assert recorded.values["compile.graphs"] == 8 and recorded.values["compile.recompile_limit_hits"] == 1
    assert all(k["name"].startswith("at::native::") for k in recorded.kernels[:3]), recorded.kernels[:3]


def test_the_baseline_compiles_up_to_the_limit_and_serves_most_sizes_eagerly(counted):
    import torch._dynamo

    spec = puzzle_file(PUZZLE, "spec.py", SMALL)
    served("baseline.py", spec)
    limit = torch._dynamo.config.recompile_limit
    assert counted.graphs == limit == 8
    assert counted.compiled_steps == limit  # the first eight sizes; the other 248 of 256 ran op by op


@pytest.mark.parametrize("workload, most_graphs", [("solution/workload.py", 3), ("alternatives/padded_buckets.py", 4)])
def test_the_fixes_serve_every_size_compiled_with_a_few_graphs(counted, workload, most_graphs):
    spec = puzzle_file(PUZZLE, "spec.py", SMALL)
    served(workload, spec)
    assert 1 <= counted.graphs <= most_graphs  # the default: a static size, a dynamic one, and batch 1's own
    assert counted.compiled_steps == spec.MAX_BATCH


@pytest.mark.parametrize("workload", STYLES)
def test_every_style_returns_the_log_probabilities_of_every_row(counted, workload):
    """dynamo's graphs as traced (the counting backend; inductor's kernels are the GPU test's): every row right."""
    spec = puzzle_file(PUZZLE, "spec.py", SMALL)
    bias = spec.make_weights(0, "cpu")["bias"]
    for out, steps in served(workload, spec)[:2]:
        exact = torch.cat([torch.log_softmax(l.double() / t.double()[:, None] + bias.double(), -1) for l, t in steps])
        assert out.dtype == torch.float32 and out.is_contiguous() and out.shape == exact.shape
        assert relative_l2(out, exact) < PUZZLE.correctness.max_rel_l2 / 100
        blank = out.clone()
        blank[: steps[0][0].shape[0]] = 0  # one step's rows answered blank
        assert relative_l2(blank, exact) > PUZZLE.correctness.max_rel_l2


def test_every_batch_size_is_served_in_warm_up_and_drawn_in_calls():
    spec = puzzle_file(PUZZLE, "spec.py", SMALL)
    warm = [l.shape[0] for steps in spec.warmup_inputs(3, "cpu") for l, _ in steps]
    assert sorted(warm) == list(range(1, spec.MAX_BATCH + 1))
    drawn = {l.shape[0] for seed in range(40) for l, _ in spec.make_input(seed, "cpu")}
    assert len(drawn) > 50 and drawn <= set(range(1, spec.MAX_BATCH + 1))


def test_the_floors_rows_hold_for_the_median_call_of_every_grade():
    """The floor is held against the median of a grade's 40 timed calls: over 2000 draws of 40 calls, no median
    holds fewer rows than LEAST_MEDIAN_ROWS, with room to spare."""
    spec = puzzle_file(PUZZLE, "spec.py")
    g = torch.Generator().manual_seed(0)
    rows = torch.randint(1, spec.MAX_BATCH + 1, (2000, 40, spec.STEPS), generator=g).sum(-1)
    lowest = min(statistics.median(r.tolist()) for r in rows)
    assert lowest > 1.4 * spec.LEAST_MEDIAN_ROWS
    work = spec.least_work(50 * 2**20)
    assert work["hbm_bytes"] == spec.LEAST_MEDIAN_ROWS * spec.VOCAB * 6 - 50 * 2**20 > 0


FIXTURES = Path(__file__).parent / "fixtures"


def test_the_h100s_grades_read_the_tiers_puzzle_toml_sets():
    """The reference graded five times, each alternative four, on one H100 (MEASUREMENTS.md): each reads its own tier
    under today's bars, and each bar stands at least a tenth from the median of every style."""
    grades = json.loads((FIXTURES / "grades_puzzle22_2026-11-28.json").read_text())
    expected = {"reference": "gold", **{f"alternatives/{n}": t for n, t in PUZZLE.alternatives.items()}}
    alternatives = [w for w in expected if w != "reference"]
    assert sorted(g["which"] for g in grades) == sorted(["reference"] * 5 + alternatives * 4)
    bars = [t.min_speedup for t in PUZZLE.tiers]
    for g in grades:
        speedups = {clock: {vs: Estimate(**e) for vs, e in by_vs.items()} for clock, by_vs in g["speedups"].items()}
        assert g["rules_passed"] and tier_reached(PUZZLE, speedups) == expected[g["which"]], g
        median = speedups["gpu"]["baseline"].median
        assert min(abs(median / bar - 1) for bar in bars) > 0.1, (g["which"], median)


def test_the_h100s_cheat_grades_were_refused():
    """Each cheat graded three times: blanking the calls it takes for unchecked is refused at correctness, every
    sampled output of those calls wrong; working ahead on the steps found alive finds none and reads far slower."""
    grades = json.loads((FIXTURES / "cheats_puzzle22_2026-11-28.json").read_text())["grades"]
    owed = {"cheats/works_inside_the_harness"}  # issue 76's, owed its GPU grades (tests/test_cheats.py)
    cheats = [f"cheats/{p.stem}" for p in PUZZLE.folder.glob("cheats/*.py") if f"cheats/{p.stem}" not in owed]
    assert sorted(g["which"] for g in grades) == sorted(cheats * 3)
    for g in grades:
        refused = " ".join(g["refused_by"])
        assert g["tier"] == "", g
        if g["which"] == "cheats/reads_which_call_is_checked":
            assert refused.startswith("correctness: Output differs") and "relative L2 error 1.00e+00" in refused
        else:
            assert refused.startswith("performance: Not yet") and g["speedups"]["baseline"] < 1.0, g


@pytest.mark.gpu
@pytest.mark.parametrize("workload", [*STYLES, "alternatives/triton_rows.py"])
def test_every_style_compiled_by_inductor_returns_the_log_probabilities_on_the_gpu(workload):
    spec = puzzle_file(PUZZLE, "spec.py")
    module = puzzle_file(PUZZLE, workload)
    bias = spec.make_weights(1, "cuda")["bias"]
    state = module.prepare({"bias": bias}, "cuda")
    steps = spec.make_input(2, "cuda")
    out = module.forward(state, steps).cpu().double()
    exact = torch.cat([torch.log_softmax(l.double() / t.double()[:, None] + bias.double(), -1) for l, t in steps]).cpu()
    rel = relative_l2(out, exact)
    print(workload, f"relative L2 {rel:.2e}")
    assert rel < PUZZLE.correctness.max_rel_l2


@pytest.mark.gpu
@pytest.mark.parametrize("workload, graphs", [("baseline.py", {8}), ("solution/workload.py", {1, 2, 3})])
def test_inductor_on_the_gpu_compiles_as_dynamo_did_on_the_cpu(workload, graphs):
    """The CPU tests' counts with inductor's real compiles: the baseline stops at the limit, the reference does not."""
    import torch._dynamo
    from torch._dynamo.utils import counters

    torch._dynamo.reset()
    counters.clear()
    spec = puzzle_file(PUZZLE, "spec.py")
    module = puzzle_file(PUZZLE, workload)
    state = module.prepare(spec.make_weights(0, "cuda"), "cuda")
    for steps in spec.warmup_inputs(0, "cuda"):
        module.forward(state, steps)
    print(workload, dict(counters["stats"]))
    assert counters["stats"]["unique_graphs"] in graphs
    torch._dynamo.reset()
