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


CUDA_SPEC = '''
import torch
def make_weights(seed, device):
    g = torch.Generator(device=device).manual_seed(seed)
    return {"w": torch.randn(4096, 4096, generator=g, device=device, dtype=torch.bfloat16) / 64}
def make_input(seed, device):
    g = torch.Generator(device=device).manual_seed(seed)
    return torch.randn(4096, 4096, generator=g, device=device, dtype=torch.bfloat16)
'''
CHAIN = '''
import torch
def prepare(weights, device):
    return weights["w"]
def chain(w, x):
    for _ in range(8):
        x = x @ w
    return x
def forward(w, x):
    return chain(w, x)
'''
# The same work queued on a side stream that is never joined back to the timed stream.
SIDE_STREAM = CHAIN + '''
side = None
def forward(w, x):
    global side
    side = side or torch.cuda.Stream()
    side.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(side):
        return chain(w, x)
'''


@pytest.mark.gpu
def test_work_hidden_on_a_side_stream_is_timed(tmp_path):
    from tutor.runner import run_harness

    folder = tmp_path / "p"
    folder.mkdir()
    for name, src in {"spec": CUDA_SPEC, "baseline": CHAIN, "mine": SIDE_STREAM}.items():
        (folder / f"{name}.py").write_text(src)
    request = {"mode": "check", "device": "cuda", "seed": 7, "spec": str(folder / "spec.py"),
               "workloads": {n: str(folder / f"{n}.py") for n in ("baseline", "mine")},
               "prepare": ["baseline", "mine"], "time": ["baseline", "mine"], "candidate": "mine",
               "oracle": "baseline", "correctness": {"checks": 1}, "timing": {"warmup": 3, "rounds": 15}}
    result = run_harness(request, tmp_path / "run", 300).result
    median = {n: sorted(v)[len(v) // 2] for n, v in result["samples_ms"].items()}
    print("side stream:", median, result["host_timed"])
    assert median["mine"] > 0.8 * median["baseline"]
    assert result["host_timed"] == ["mine"]
