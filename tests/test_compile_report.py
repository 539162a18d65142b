"""Issue 13, part 5: what torch.compile did not do is shown (tutor.harness.compile_report), graded for real."""

from __future__ import annotations

import pytest

from tutor.grading.performance import compile_lines
from tutor.runner import run_harness

# backend="eager": dynamo's graph capture without inductor's compile, fast on a 2-core CPU.
BREAKS_AND_RECOMPILES = """
import torch

@torch.compile(backend="eager")
def step(x):
    y = x * 2
    print("a graph break: dynamo cannot trace print")
    return y + 1

def prepare(weights, device):
    return weights

def forward(state, x):
    step(x.double())  # a second dtype: the guards fail, dynamo compiles step again
    return (step(x) - 1) / 2 * state["w"]
"""


def test_graph_breaks_and_recompiles_are_reported(make_request, tmp_path):
    result = run_harness(make_request(mine=BREAKS_AND_RECOMPILES), tmp_path / "run", 300).result
    report = result["compile"]
    print(report)
    assert report["graph_breaks"] >= 1 and report["recompiles"] >= 1 and report["compiled_graphs"] >= 2
    assert report["reasons"]["recompiles"] and report["reasons"]["graph_breaks"]
    assert all(c["ok_structure"] and c["rel_l2"] == 0.0 for c in result["checks"])
    lines = compile_lines(report)
    assert lines[0].startswith(f"torch.compile: {report['compiled_graphs']} graph(s), {report['graph_breaks']} graph break(s)")
    assert any(line.startswith("  recompiled: ") for line in lines)


def test_a_function_compiled_past_the_recompile_limit_is_reported_as_given_up(make_request, tmp_path):
    """dynamic=False and a new size each call (puzzle22's baseline): after 8 graphs dynamo stops compiling the
    function and runs every new size eagerly, saying so once in a warning; the report counts it and names the
    function, in the profile's metrics and the grade's lines alike."""
    result = run_harness(make_request(mine="""
        import torch

        step = torch.compile(lambda x: torch.log_softmax(x * 2, -1), dynamic=False, backend="eager")

        def prepare(weights, device):
            return weights

        def forward(state, x):
            for rows in range(1, 11):  # ten sizes: two past the limit
                step(x.repeat(rows, 1))  # [rows, 4]: a new size for the guards
            return x * state["w"]
    """), tmp_path / "run", 300).result
    report = result["compile"]
    print(report)
    assert report["recompile_limit_hits"] == 1 and report["compiled_graphs"] == 8
    assert "recompile_limit (8)" in report["reasons"]["recompile_limit"][0]
    assert "function: '<lambda>'" in report["reasons"]["recompile_limit"][0]
    assert any(line.startswith("  stopped compiling, eager from then on: torch._dynamo hit config.recompile_limit")
               for line in compile_lines(report))


def test_no_compile_no_report(make_request, tmp_path):
    result = run_harness(make_request(mine="""
        def prepare(weights, device):
            return weights
        def forward(state, x):
            return x * state["w"]
    """), tmp_path / "run", 120).result
    assert "compile" not in result and compile_lines({}) == []


@pytest.mark.gpu
def test_cudagraphs_skipped_by_reduce_overhead_are_named(workspace):
    # The case: torchao's fp8 model under reduce-overhead ran 0.455 ms, slower than bf16 eager, silently.
    from tutor import actions
    from tutor.catalog import get_puzzle

    puzzle = get_puzzle("puzzle1")
    baseline = (puzzle.folder / "baseline.py").read_text()
    workspace.editable_path(puzzle, "workload.py").write_text(baseline.replace(
        "    return model\n", "    return torch.compile(model, mode=\"reduce-overhead\")\n", 1))
    verdict = actions.grade(workspace, puzzle)
    details = next(c for c in verdict.criteria if c.name == "performance").details
    report = [d for d in details if "torch.compile" in d or d.startswith("  ")]
    print("fp8 under reduce-overhead:", verdict.timings_ms, report)
    assert report and report[0].startswith("torch.compile: ")
