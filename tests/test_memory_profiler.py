"""The memory profiler: the CUDA allocator's history read into citable metrics, sites and a timeline.

On CPU the parser reads snapshots built here in torch's format (the events and segments
torch.cuda.memory._snapshot() writes, fields as torch 2.11 names them); the GPU tests record real
ones through the harness, and the H100 recordings of puzzle1 and puzzle2 are read back where present.
"""

from __future__ import annotations

import ast
import pickle
from pathlib import Path

import pytest

from tutor.harness import memory_history
from tutor.metrics import ProfileMetrics, describe
from tutor.profilers.memory_snapshot import extract, phase_of, site_of
from tutor.profilers.registry import PROFILERS
from tutor.protocol import MEMORY_PHASES

MB = 2**20
HARNESS = "/x/site-packages/tutor/harness/memory_history.py"
WORKLOAD = "/ws/puzzle1/workload.py"


def frames(phase: str, line: int, name: str = "forward") -> list[dict]:
    """A stack as torch records it, innermost first: torch's own frames, the workload's, the phase function."""
    return [{"filename": "/x/site-packages/torch/nn/functional.py", "line": 100, "name": "linear"},
            {"filename": WORKLOAD, "line": line, "name": name},
            {"filename": "/x/site-packages/tutor/harness/loading.py", "line": 50, "name": "call_workload"},
            {"filename": HARNESS, "line": 40, "name": f"infprof_phase_{phase}"}]


def event(action: str, addr: int, size: int, stack=None) -> dict:
    return {"action": action, "addr": addr, "size": size, "stream": 0, "time_us": 0, "frames": stack or []}


def dequantising_run(calls_warm: int = 3, calls_timed: int = 4, layers: int = 8) -> list[dict]:
    """puzzle1's baseline, as the allocator sees it: 16 MB of fp8 weight per layer kept, a 32 MB bf16
    copy of it made and freed in every call, the free completing later without a stack."""
    trace = [event("segment_alloc", 1 << 40, layers * 16 * MB, frames("prepare", 5, "prepare"))]
    trace += [event("alloc", (1 << 40) + i * 16 * MB, 16 * MB, frames("prepare", 5, "prepare")) for i in range(layers)]
    trace.append(event("segment_alloc", 1 << 41, 32 * MB, frames("warmup", 12)))
    for phase, calls in (("warmup", calls_warm), ("iterations", calls_timed)):
        for _ in range(calls):
            for _ in range(layers):
                trace.append(event("alloc", 1 << 41, 32 * MB, frames(phase, 12)))
                trace.append(event("free_requested", 1 << 41, 32 * MB, frames(phase, 12)))
                trace.append(event("free_completed", 1 << 41, 32 * MB))
    return trace


def segments(layers: int = 8, pools: tuple = ()) -> list[dict]:
    """What the snapshot holds at its end: the weights' segment (all active), the copy's (free), graph pools."""
    held = [{"device": 0, "address": 1 << 40, "total_size": layers * 16 * MB, "allocated_size": layers * 16 * MB,
             "stream": 0, "segment_type": "large", "segment_pool_id": (0, 0),
             "blocks": [{"address": (1 << 40) + i * 16 * MB, "size": 16 * MB, "requested_size": 16 * MB,
                         "state": "active_allocated", "frames": frames("prepare", 5, "prepare")} for i in range(layers)]},
            {"device": 0, "address": 1 << 41, "total_size": 32 * MB, "allocated_size": 0, "stream": 0,
             "segment_type": "large", "segment_pool_id": (0, 0),
             "blocks": [{"address": 1 << 41, "size": 32 * MB, "requested_size": 0, "state": "inactive", "frames": []}]}]
    for i, (pool, mb) in enumerate(pools):
        held.append({"device": 0, "address": (1 << 42) + i * (1 << 30), "total_size": mb * MB, "allocated_size": 0,
                     "stream": 0, "segment_type": "large", "segment_pool_id": pool,
                     "blocks": [{"address": 1 << 42, "size": mb * MB, "state": "inactive", "frames": []}]})
    return held


def write(tmp_path: Path, trace: list[dict], segs: list[dict]) -> Path:
    path = tmp_path / "memory.pickle"
    path.write_bytes(pickle.dumps({"segments": segs, "device_traces": [trace],
                                   "allocator_settings": {"PYTORCH_CUDA_ALLOC_CONF": ""}}))
    return path


def test_a_bf16_copy_made_in_every_call_shows_per_iteration_per_phase_and_at_its_site(tmp_path):
    m = extract(write(tmp_path, dequantising_run(), segments()), iterations=4)
    v = m.values
    assert v["allocator.allocated_mb_per_iter"] == 8 * 32 and v["allocator.freed_mb_per_iter"] == 8 * 32
    assert v["allocator.allocs_per_iter"] == 8
    assert v["allocator.prepare.peak_allocated_mb"] == 128 and v["allocator.prepare.largest_alloc_mb"] == 16
    assert v["allocator.warmup.peak_allocated_mb"] == 128 + 32 == v["allocator.iterations.peak_allocated_mb"]
    assert v["allocator.iterations.peak_reserved_mb"] == 160 and v["allocator.fragmentation_mb"] == 0
    assert v["allocator.warmup.allocs"] == 24 and v["allocator.graph_pools"] == 0
    top = m.kernels[0]
    assert top["site"] == "workload.py:12 forward" and top["phase"] == "iterations" and top["count"] == 32
    assert {s["phase"] for s in m.kernels} == {"prepare", "warmup", "iterations"}
    series = m.series
    assert len(series["allocated_mb"]) <= 400 and max(series["allocated_mb"]) == 160
    assert list(series["phase_starts"]) == ["prepare", "warmup", "iterations"]


def test_memory_handed_back_to_cuda_in_every_call_shows_as_segment_churn_per_iteration(tmp_path):
    """puzzle23's baseline, as the allocator sees it: empty_cache() after each of 3 prompts a call, so every
    prompt's blocks come from a cudaMalloc and go back by a cudaFree; a warm allocator (the warm-up's calls) makes
    neither."""
    trace = [event("segment_alloc", 1 << 40, 64 * MB, frames("prepare", 5, "prepare")),
             event("alloc", 1 << 40, 64 * MB, frames("prepare", 5, "prepare")),
             event("segment_alloc", 1 << 41, 32 * MB, frames("warmup", 9))]
    for _ in range(2):  # warm: the one cached segment serves every call
        trace += [event("alloc", 1 << 41, 32 * MB, frames("warmup", 9)), event("free_completed", 1 << 41, 32 * MB)]
    for _ in range(4):
        for mb in (8, 32, 16):
            trace += [event("segment_alloc", 1 << 42, mb * MB, frames("iterations", 9)),
                      event("alloc", 1 << 42, mb * MB, frames("iterations", 9)),
                      event("free_completed", 1 << 42, mb * MB),
                      event("segment_free", 1 << 42, mb * MB, frames("iterations", 11))]
    v = extract(write(tmp_path, trace, segments()), iterations=4).values
    assert v["allocator.segment_allocs_per_iter"] == 3 == v["allocator.segment_frees_per_iter"]
    assert v["allocator.allocs_per_iter"] == 3


def test_graph_pools_and_a_replayed_graph_that_allocates_nothing(tmp_path):
    trace = dequantising_run(calls_warm=2, calls_timed=0)
    m = extract(write(tmp_path, trace, segments(pools=[((1, 0), 34), ((1, 0), 2), ((2, 5), 4)])), iterations=4)
    assert m.values["allocator.graph_pools"] == 2 and m.values["allocator.graph_pool_mb"] == 40
    assert "allocator.allocated_mb_per_iter" not in m.values  # no event in the profiled calls at all


def test_a_history_that_lost_its_oldest_events_is_anchored_to_what_the_segments_hold(tmp_path):
    trace = dequantising_run()[1 + 8:]  # the ring buffer dropped the weights' segment and allocations
    m = extract(write(tmp_path, trace, segments()), iterations=4)
    assert m.values["allocator.iterations.peak_allocated_mb"] == 160  # 128 held from before, 32 per copy
    assert m.values["allocator.iterations.peak_reserved_mb"] == 160


def test_events_without_a_stack_belong_to_the_phase_before_them():
    assert phase_of(frames("warmup", 1)) == "warmup" and phase_of([]) is None
    assert site_of(frames("warmup", 12)) == "workload.py:12 forward"
    assert site_of([{"filename": "/usr/lib/python3.12/site-packages/torch/x.py", "line": 1, "name": "f"}]) == "(inside torch)"
    assert site_of([]) == "(no stack recorded)"
    torchao = {"filename": "/usr/lib/python3.12/site-packages/torchao/dtypes/floatx.py", "line": 88, "name": "dequantize"}
    installed_baseline = {"filename": "/v/lib/python3.12/site-packages/challenges/puzzle1/baseline.py", "line": 30,
                          "name": "forward"}
    assert site_of([torchao, *frames("warmup", 12)]) == "workload.py:12 forward"  # the learner's line first
    assert site_of([torchao, installed_baseline]) == "baseline.py:30 forward"  # a puzzle's file, wherever installed
    assert site_of([torchao]) == "floatx.py:88 dequantize"  # else the library that asked
    assert site_of([{"filename": "/usr/lib/python3.12/copy.py", "line": 1, "name": "deepcopy"}]) == "(inside torch)"


def test_the_phase_functions_are_the_ones_the_parser_looks_for():
    source = Path(memory_history.__file__).read_text()
    defined = {n.name for n in ast.walk(ast.parse(source)) if isinstance(n, ast.FunctionDef)}
    assert set(MEMORY_PHASES) <= defined
    assert {memory_history.PHASE_FUNCTIONS[p].__name__ for p in MEMORY_PHASES.values()} == set(MEMORY_PHASES)
    assert memory_history.in_phase("warmup", lambda a, b: a + b, 2, 3) == 5


def test_every_metric_is_documented_and_the_profile_round_trips(tmp_path):
    m = extract(write(tmp_path, dequantising_run(), segments()), iterations=4)
    undocumented = [name for name in m.values if name != "iterations" and not describe(name)]
    assert not undocumented
    again = ProfileMetrics.from_json(m.to_json())
    assert again.series == m.series and again.kernels == m.kernels and again.profiler == "memory"
    assert all(h in m.values for h in PROFILERS["memory"].headline)


def test_puzzle1_and_puzzle2_list_the_memory_profiler_and_point_at_it():
    from tutor.catalog import get_puzzle

    for pid in ("puzzle1", "puzzle2"):
        p = get_puzzle(pid)
        assert "memory" in p.profilers and any("--profiler memory" in h for h in p.hints)


H100_SNAPSHOTS = Path(__file__).parent / "fixtures" / "memory"  # torch 2.11.0+cu130, recorded 2026-11-25


def read_h100(name: str) -> ProfileMetrics:
    """A snapshot that tests/fixtures/record_memory_snapshots.py recorded on the H100 through `profile --profiler memory`."""
    import gzip
    import shutil
    import tempfile

    with tempfile.TemporaryDirectory() as tmp, gzip.open(H100_SNAPSHOTS / f"{name}.pickle.gz") as f:
        path = Path(tmp) / "memory.pickle"
        with open(path, "wb") as out:
            shutil.copyfileobj(f, out)
        return extract(path, iterations=5)


def test_puzzle1s_h100_recordings_show_the_dequantised_weights_in_the_baseline_alone():
    baseline, reference = read_h100("puzzle1_baseline"), read_h100("puzzle1_reference")
    assert baseline.values["allocator.allocated_mb_per_iter"] >= 8 * 32  # a bf16 copy of each 4096x4096 weight
    assert reference.values.get("allocator.allocated_mb_per_iter", 0) < 1
    # Where the bytes come from, as the Memory view lists it: torchao's dequantisation, per call.
    top = baseline.kernels[0]
    assert "_dequantize_affine_float8" in top["site"] and top["phase"] in ("warmup", "iterations")
    assert not any("dequantize" in site["site"] for site in reference.kernels)


def test_puzzle2s_h100_recordings_show_the_baselines_larger_graph_pools():
    baseline, reference = read_h100("puzzle2_baseline"), read_h100("puzzle2_reference")
    assert reference.values["allocator.segment_frees_per_iter"] == 0  # nothing handed back while it serves
    assert baseline.values["allocator.graph_pool_mb"] > 2 * reference.values["allocator.graph_pool_mb"] > 0
    assert baseline.values["allocator.warmup.peak_allocated_mb"] > reference.values["allocator.warmup.peak_allocated_mb"]


def test_the_opener_line_turns_an_h100_snapshot_into_pytorchs_memory_viewer_page(tmp_path):
    """The one line the Memory view prints, run for real on CPU: torch's own tool reads the snapshot."""
    import gzip
    import shlex
    import subprocess
    import sys

    snapshot = tmp_path / "memory.pickle"
    snapshot.write_bytes(gzip.decompress((H100_SNAPSHOTS / "puzzle1_baseline.pickle.gz").read_bytes()))
    line = PROFILERS["memory"].opener.command(snapshot)
    argv = [sys.executable if word == "python" else word for word in shlex.split(line)]
    done = subprocess.run(argv, cwd=tmp_path, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    page = (tmp_path / "memory.html").read_text()
    assert page.lstrip().startswith("<!DOCTYPE html>") and "Active Memory Timeline" in page


@pytest.mark.gpu
def test_the_harness_records_a_real_history_with_its_phases_and_sites(tmp_path):
    import torch

    def make():  # a line of this file is the site
        return torch.empty(8 * MB, dtype=torch.uint8, device="cuda")

    memory_history.start()
    kept = memory_history.in_phase("prepare", make)
    for _ in range(3):
        memory_history.in_phase("iterations", lambda: make().add_(1))
    torch.cuda.synchronize()
    path = tmp_path / "memory.pickle"
    memory_history.save(path)
    m = extract(path, iterations=3)
    print(torch.__version__, {k: v for k, v in m.values.items() if "per_iter" in k or "prepare" in k}, m.kernels[:2])
    assert m.values["allocator.allocated_mb_per_iter"] == 8 and m.values["allocator.allocs_per_iter"] == 1
    assert m.values["allocator.prepare.largest_alloc_mb"] == 8
    assert m.kernels[0]["site"].startswith("test_memory_profiler.py:") and m.kernels[0]["phase"] == "iterations"
    del kept
