"""Trace extraction on real traces: tests/fixtures/record_*.py say where and how each was recorded."""

import gzip
import importlib.util
import json
import subprocess
import sys
from pathlib import Path

import pytest

from tutor.metrics import ProfileMetrics, describe
from tutor.profilers.gpu_timeline import LAUNCH_APIS, kernel_category
from tutor.profilers.torch_trace import extract
from conftest import recording

FIXTURES = Path(__file__).parent / "fixtures"


def _recorder(name: str):
    """The recording script, for the constants that say what its workload does."""
    spec = importlib.util.spec_from_file_location(name, FIXTURES / f"{name}.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


CPU = _recorder("record_cpu_trace")
GPU = _recorder("record_gpu_traces")


def _extract(name: str) -> ProfileMetrics:
    sidecar = FIXTURES / f"{name}.memory.json"
    memory = json.loads(sidecar.read_text())["memory"] if sidecar.exists() else None
    return extract(FIXTURES / f"{name}.json.gz", memory)


@pytest.fixture(scope="module")
def cpu_loop():
    return _extract("cpu_loop_trace")


@pytest.fixture(scope="module")
def h2d_sync():
    return _extract("h2d_sync")


@pytest.fixture(scope="module")
def graph_replay():
    return _extract("graph_replay")


def _raw_events(name: str) -> list[dict]:
    return json.loads(gzip.decompress((FIXTURES / f"{name}.json.gz").read_bytes()))["traceEvents"]


def test_cpu_loop_counts_one_top_level_op_per_call_the_loop_makes(cpu_loop):
    v = cpu_loop.values
    assert cpu_loop.device == "cpu"
    assert v["iterations"] == CPU.ITERATIONS
    # Nested calls (aten::std -> aten::mean -> aten::sum ...) are not counted again.
    assert v["cpu.ops_per_iter"] == CPU.ROWS * CPU.OPS_PER_ROW + CPU.OPS_PER_ITER_EXTRA
    assert v["cpu.allocs_per_iter"] >= CPU.ROWS  # every row's arithmetic allocates fresh tensors
    assert 0 < v["cpu.time_per_iter_us"] < 1e6
    assert not any(name.startswith(("gpu.", "kernels.", "memcpy.", "memory.")) for name in v)


def test_a_cpu_run_lists_its_operators_by_self_time_as_the_cpu_view_does(cpu_loop):
    """In place of kernels, each aten operator's own time (less the operators it called) per forward(), its calls
    and its share, the dearest first: the per-row operators once a row, and the shares of every operator adding up
    to the whole."""
    ops = {k["name"]: k for k in cpu_loop.kernels}
    assert list(ops) == [k["name"] for k in sorted(cpu_loop.kernels, key=lambda k: -k["total_us"])]
    for name in ("aten::std", "aten::clamp", "aten::sub", "aten::mul"):  # one call a row (OPS_PER_ROW's list)
        assert ops[name]["count"] == CPU.ROWS, name
    assert abs(sum(k["share"] for k in cpu_loop.kernels) - 1) < 1e-9  # every operator fits the table (under 30)
    assert all(k["total_us"] > 0 and abs(k["mean_us"] * k["count"] - k["total_us"]) < 1e-6 for k in ops.values())
    # Nothing counted twice: the operators' own time adds up to less than a forward()'s.
    assert sum(k["total_us"] for k in ops.values()) < cpu_loop.values["cpu.time_per_iter_us"]


def test_every_metric_is_a_documented_float(cpu_loop, h2d_sync, graph_replay):
    for metrics in (cpu_loop, h2d_sync, graph_replay):
        for name, value in metrics.values.items():
            assert describe(name), f"{name} is not in METRIC_DOCS"
            assert isinstance(value, float)
        assert ProfileMetrics.from_json(metrics.to_json()) == metrics


def test_h2d_sync_sees_pageable_and_pinned_copies_and_syncs(h2d_sync):
    v = h2d_sync.values
    assert h2d_sync.device == "cuda"
    assert v["iterations"] == GPU.ITERATIONS
    assert v["cpu.ops_per_iter"] == GPU.H2D_OPS_PER_ITER
    assert v["memcpy.h2d_bytes_per_iter"] == GPU.PAGEABLE_BYTES + GPU.PINNED_BYTES
    assert v["memcpy.d2h_bytes_per_iter"] == GPU.D2H_BYTES
    assert v["memcpy.pageable_per_iter"] == 1  # the pinned copy is not pageable
    assert 1 < v["memcpy.h2d_gbps"] < 1000
    assert v["sync.calls_per_iter"] >= 1  # .item(), and the pageable copy's own wait
    assert v["graphs.replays_per_iter"] == 0
    rows = {k["name"]: k for k in h2d_sync.kernels}
    assert rows["Memcpy HtoD (Pageable -> Device)"]["count"] == GPU.ITERATIONS
    assert rows["Memcpy HtoD (Pinned -> Device)"]["count"] == GPU.ITERATIONS
    # mul, cast, add, relu, at least one gemm, the sum's reduction
    assert v["kernels.per_iter"] >= 6
    assert {"gemm", "elementwise", "reduction", "memcpy"} <= {k["category"] for k in h2d_sync.kernels}
    assert v["memory.peak_allocated_mb"] > 0 and v["memory.peak_reserved_mb"] >= v["memory.peak_allocated_mb"]


def test_graph_replay_is_one_launch_for_many_kernels(graph_replay):
    v = graph_replay.values
    assert v["iterations"] == GPU.ITERATIONS
    assert v["graphs.replays_per_iter"] == 1
    assert v["kernels.per_iter"] >= 3  # two Linear gemms and the GELU, all from one cudaGraphLaunch
    launches = [e for e in _raw_events("graph_replay")
                if e.get("cat") == "cuda_runtime" and e["name"] in LAUNCH_APIS]
    assert len(launches) == GPU.ITERATIONS
    assert v["cpu.ops_per_iter"] == 0  # replay bypasses the dispatcher entirely
    assert v["sync.calls_per_iter"] == 0
    assert v["kernels.category.gemm.share"] > 0.5
    assert v["launch.api_us_per_iter"] > 0 and v["launch.latency_us_median"] > 0


@pytest.mark.parametrize("name", ["h2d_sync", "graph_replay"])
def test_gpu_time_accounts_add_up(name):
    metrics = _extract(name)
    v = metrics.values
    shares = {k: x for k, x in v.items() if k.startswith("kernels.category.") and k.endswith(".share")}
    assert sum(shares.values()) == pytest.approx(1.0)
    per_iter = sum(x for k, x in v.items() if k.startswith("kernels.category.") and k.endswith(".us_per_iter"))
    assert per_iter * v["iterations"] == pytest.approx(sum(k["total_us"] for k in metrics.kernels))
    kernel_us = sum(k["total_us"] for k in metrics.kernels if k["category"] not in ("memcpy", "memset"))
    assert v["gpu.time_per_iter_us"] == pytest.approx(kernel_us / v["iterations"])
    assert 0 < v["gpu.busy_fraction"] <= 1 and v["gpu.idle_us_per_iter"] >= 0


@pytest.mark.parametrize("name", ["h2d_sync", "graph_replay"])
def test_kernel_table_is_sorted_with_short_and_full_names(name):
    table = _extract(name).kernels
    totals = [k["total_us"] for k in table]
    assert totals == sorted(totals, reverse=True)
    assert sum(k["share"] for k in table) == pytest.approx(1.0)
    for row in table:
        assert set(row) == {"name", "category", "count", "total_us", "mean_us", "share", "full_name"}
        assert len(row["name"]) <= 80 and "<" not in row["name"]
        assert row["full_name"].startswith(row["name"]) or row["full_name"].startswith("void ")
        assert row["mean_us"] == pytest.approx(row["total_us"] / row["count"])


def test_kernel_categories_follow_the_name_not_its_template_arguments():
    names = {k["full_name"]: k["category"] for k in _extract("h2d_sync").kernels
             + _extract("graph_replay").kernels}
    for full_name, category in names.items():
        if full_name.startswith("void cublasLt::splitKreduce_kernel"):
            assert category == "gemm"  # part of a split-K gemm, not a standalone reduction
        if full_name.startswith("void at::native::reduce_kernel"):
            assert category == "reduction"
    # Flash attention names cutlass types in its template arguments; AllReduce is communication.
    assert kernel_category("void pytorch_flash::flash_fwd_kernel<Flash_fwd_kernel_traits<cutlass::half_t>>") \
        == "attention"
    assert kernel_category("ncclDevKernel_AllReduce_Sum_f32_RING_LL(ncclDevKernelArgsStorage<4096ul>)") == "comm"
    assert kernel_category("triton_red_fused_sum_0") == "reduction"


def test_trace_without_iter_ranges_is_a_clear_error(tmp_path):
    events = [e for e in _raw_events("h2d_sync") if e.get("name") != "infprof:iter"]
    path = tmp_path / "no_iters.json"
    path.write_text(json.dumps({"traceEvents": events}))
    with pytest.raises(ValueError, match="no 'infprof:iter' ranges"):
        extract(path)


def test_truncated_trace_is_a_clear_error(tmp_path):
    path = tmp_path / "cut.json"
    path.write_bytes(gzip.decompress((FIXTURES / "graph_replay.json.gz").read_bytes())[:5000])
    with pytest.raises(ValueError, match="Cannot read the trace"):
        extract(path)


def test_reading_a_trace_never_imports_torch():
    code = ("import sys; from tutor.profilers.torch_trace import extract; "
            f"extract({str(FIXTURES / 'cpu_loop_trace.json.gz')!r}); assert 'torch' not in sys.modules")
    subprocess.run([sys.executable, "-c", code], check=True, cwd=Path(__file__).parents[1])


def extracted_again(trace: Path) -> tuple[ProfileMetrics, dict]:
    """A shipped recording's trace extracted here, with the memory figures its metrics.json holds (the memory run
    is not in the trace), and the values that metrics.json recorded on the H100."""
    recorded = json.loads(trace.with_name("baseline_metrics.json").read_text())["values"]
    memory = {k.removeprefix("memory."): v for k, v in recorded.items() if k.startswith("memory.")}
    return extract(trace, memory), recorded


# Recorded by `benchmarks/device_verify.sh puzzle1` on the H100: the tutor's own `profile puzzle1`
# run on the fp8 baseline, with the metrics it computed there.
@pytest.fixture(scope="module")
def puzzle1_baseline():
    return extracted_again(recording("puzzle1", "trace.json.gz"))


def test_puzzle1_extraction_here_matches_the_h100_run(puzzle1_baseline):
    metrics, recorded = puzzle1_baseline
    assert metrics.values.keys() == recorded.keys()
    for key, value in recorded.items():
        assert metrics.values[key] == pytest.approx(value, rel=1e-9), key


RECORDED_TRACES = sorted(Path(__file__).parents[1].glob("challenges/*/recordings/baseline_trace.json.gz"))


@pytest.mark.parametrize("trace", RECORDED_TRACES, ids=lambda path: path.parents[1].name)
def test_every_recording_holds_what_its_trace_gives_today(trace):
    """A metric the extraction learns (memcpy.d2h_gbps, for puzzle7) is in every shipped recording whose trace shows
    it, at the value the trace gives: study mode shows what a live profile would. Figures from other sources (the
    memory run, torch.compile's report, a serving replay, the link probe) are the recording's alone."""
    metrics, recorded = extracted_again(trace)
    assert {key: recorded.get(key) for key in metrics.values} == pytest.approx(metrics.values, rel=1e-9)


def test_puzzle1_profile_shows_dequantization(puzzle1_baseline):
    metrics, _ = puzzle1_baseline
    v = metrics.values
    # Per layer: three elementwise kernels materialise the bf16 weight, then a splitK GEMM + reduce.
    assert v["kernels.per_iter"] == 40
    assert v["kernels.category.elementwise.share"] > 0.85 > 0.15 > v["kernels.category.gemm.share"]
    elementwise = [k for k in metrics.kernels if k["category"] == "elementwise"]
    assert len(elementwise) == 3 and all(k["count"] == 8 * v["iterations"] for k in elementwise)
    # 16.8 MB of fp8 read and 33.5 MB of bf16 written per layer take tens of µs, the GEMM ~12.
    assert all(k["mean_us"] > 25 for k in elementwise)


def test_puzzle1_reference_answer_cites_metrics_the_profile_has(puzzle1_baseline):
    import tomllib

    from tutor.catalog import get_puzzle

    metrics, _ = puzzle1_baseline
    answer = tomllib.loads((get_puzzle("puzzle1").solution_dir / "answer.toml").read_text())
    assert {e["metric"] for e in answer["evidence"]} <= metrics.values.keys()
