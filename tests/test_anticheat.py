"""Workloads that would fool a naive grader, graded for real: each must be rejected."""

from __future__ import annotations

import pytest

from tutor import actions
from tutor.catalog import get_puzzle

# bf16 weights captured into a CUDA graph, then let go of: the graph still reads their old
# addresses, and would give right answers from stale memory while prepare() "keeps" 0 bytes.
GRAPH_ON_FREED_WEIGHTS = '''
import torch

def prepare(weights, device):
    ws = weights["weights"]
    static_x = torch.zeros(1, ws[0].shape[1], dtype=torch.bfloat16, device=device)
    def run():
        h = static_x
        for w in ws:
            h = torch.nn.functional.linear(h, w)
        return h
    side = torch.cuda.Stream()
    side.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(side):
        run()
    torch.cuda.current_stream().wait_stream(side)
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph):
        static_y = run()
    return graph, static_x, static_y

def forward(state, x):
    graph, static_x, static_y = state
    static_x.copy_(x)
    graph.replay()
    return static_y.clone()
'''


@pytest.mark.gpu
def test_graph_reading_freed_weights_is_caught(workspace):
    puzzle = get_puzzle("puzzle1")
    workspace.editable_path(puzzle, "workload.py").write_text(GRAPH_ON_FREED_WEIGHTS)
    verdict = actions.grade(workspace, puzzle)
    correctness = next(c for c in verdict.criteria if c.name == "correctness")
    print("graph on freed weights:", correctness.summary, correctness.details[:1])
    assert not correctness.passed and not verdict.passed and verdict.tier == ""
    assert "NaN" in correctness.details[0]
