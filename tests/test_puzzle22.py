"""puzzle22, Sixty-four sizes of one step, as far as the CPU can check it: dynamo's own guards, run on the CPU with
a backend that counts graphs and the steps they serve, compile the baseline eight times and then leave most batch
sizes to run eagerly, while the reference and the padded buckets serve every size compiled; every style's
log-probabilities match float64's far inside the tolerance and a blank step does not; the floor's rows hold for
the median call. A draft: the GPU's numbers are to be measured (MEASUREMENTS.md).
"""

from __future__ import annotations

import statistics

import pytest
import torch

from conftest import puzzle_file, relative_l2
from tutor.catalog import all_puzzles, get_puzzle

PUZZLE = get_puzzle("puzzle22", drafts=True)
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


def test_the_puzzle_is_a_draft_until_the_gpu_measures_it():
    assert PUZZLE.draft and "puzzle22" not in all_puzzles()


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
