"""The multi-GPU launcher (issue 18) on the CPU, for real: two ranks forked with torch.distributed over
gloo, asked together, their collectives' results and timings gathered, a failing or stuck rank reported
with its rank and a time limit, and every rank reaped."""

from __future__ import annotations

import os
import time

import pytest

from tutor.harness import ranks
from tutor.harness.loading import HarnessFailure


def handler(rank: int, world: int, message: dict) -> dict:
    """What a multi-GPU workload's ranks do, in miniature: a collective, a failure, a hang, a timed call."""
    import torch
    import torch.distributed as dist

    op = message["op"]
    if op == "all_reduce":
        x = torch.full((4,), float(rank + 1))
        dist.all_reduce(x)
        return {"sum": x, "rank": rank, "pid": os.getpid()}
    if op == "fail" and rank == message["rank"]:
        raise RuntimeError("a workload error")
    if op == "hang" and rank == message["rank"]:
        time.sleep(30)
    if op == "time":  # rank 1 is the slow one: a call lasts as long as its slowest rank
        start = time.perf_counter()
        x = torch.ones(1)
        time.sleep(0.02 * (1 + rank))
        dist.all_reduce(x)
        return {"ms": [(time.perf_counter() - start) * 1e3], "total": float(x)}
    return {}


@pytest.fixture
def group():
    g = ranks.start(2, handler, "gloo")
    yield g
    g.stop()
    for pid in g.pids:  # every rank reaped: none left running or as a zombie
        with pytest.raises(ChildProcessError):
            os.waitpid(pid, os.WNOHANG)


def test_ranks_run_a_collective_together_and_answer_in_rank_order(group):
    replies = group.ask("all_reduce")
    assert [r["rank"] for r in replies] == [0, 1] and len({r["pid"] for r in replies}) == 2
    assert all(r["sum"].tolist() == [3.0] * 4 for r in replies)  # 1 + 2 on every rank


def test_a_failing_rank_is_named_and_the_others_answer_on(group):
    with pytest.raises(HarnessFailure) as e:
        group.ask("fail", rank=1)
    assert e.value.kind == "crashed" and "rank 1: RuntimeError: a workload error" in e.value.message
    assert group.ask("all_reduce")[0]["sum"].tolist() == [3.0] * 4  # the group is still usable


def test_a_rank_that_never_answers_is_named_within_the_limit(group):
    started = time.monotonic()
    with pytest.raises(HarnessFailure) as e:
        group.ask("hang", rank=0, limit_s=2)
    assert e.value.kind == "timeout" and e.value.message.startswith("rank 0 did not answer")
    assert time.monotonic() - started < 10


def test_a_call_is_timed_as_its_slowest_rank_saw_it(group):
    replies = group.ask("time", aligned=True)
    assert all(r["total"] == 2.0 for r in replies)
    # Rank 0 waits in the all-reduce for rank 1's longer sleep: both end together, after rank 1's 40 ms.
    calls = ranks.slowest([r["ms"] for r in replies])
    assert len(calls) == 1 and calls[0] >= 40


def test_timings_of_unequal_lengths_are_refused():
    assert ranks.slowest([[1.0, 5.0], [2.0, 3.0]]) == [2.0, 5.0]
    with pytest.raises(ValueError):
        ranks.slowest([[1.0], [1.0, 2.0]])


def test_the_collectives_benchmark_measures_each_scene_through_the_launcher():
    """benchmarks/collectives.py, the multi-GPU puzzles' first sweep, on gloo here: one row a scene, the
    slowest rank's median, the bus bandwidth NCCL's tests would report (no claim about speed on a CPU)."""
    import importlib.util
    from pathlib import Path

    path = Path(__file__).parents[1] / "benchmarks" / "collectives.py"
    spec = importlib.util.spec_from_file_location("collectives_bench", path)
    bench = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(bench)
    group = ranks.start(2, bench.measure, "gloo")
    try:
        rows = bench.figures(group, [8 * bench.KIB])
    finally:
        group.stop()
    assert [(r["scene"], r["total_bytes"]) for r in rows] == [("all_reduce", 8192), ("separate", 256 * 65536),
                                                               ("all_reduce", 256 * 65536)]
    assert all(r["ms"] > 0 and r["device"] == "cpu" for r in rows)
    assert rows[-1]["bus_gbps"] == pytest.approx(65536 * 256 / (rows[-1]["ms"] * 1e-3) / 1e9)  # 2 (n - 1) / n = 1


# -- a grade whose sides are rank groups, through the real harness subprocess (gloo on the CPU) ------------

ALL_REDUCING = """
    import torch
    import torch.distributed as dist
    def prepare(weights, device):
        return weights
    def forward(state, x):
        y = x * state["w"]
        dist.all_reduce(y)
        return y / dist.get_world_size()
"""


def grade_in_ranks(make_request, tmp_path, mine: str, world: int = 2):
    from tutor.runner import run_harness

    request = make_request(mine=mine)
    request["ranks"] = world
    return run_harness(request, tmp_path / "run", 180, on_event=lambda event: None)


def test_a_grade_runs_each_side_as_ranks_and_checks_rank_0s_output(make_request, tmp_path):
    """The learner's ranks all-reduce their input and divide by the world: the baseline's output, found
    only if every rank took part; every timed round is one sample, the slowest rank's."""
    outcome = grade_in_ranks(make_request, tmp_path, ALL_REDUCING)
    result = outcome.result
    assert [c["rel_l2"] for c in result["checks"]] == [0.0, 0.0]
    assert all(c["rel_l2"] == 0.0 for c in result["timed_checks"])
    assert {name: len(ms) for name, ms in result["samples_ms"].items()} == {"baseline": 3, "mine": 3}
    assert not result["violations"]  # gloo's own threads are not the learner's side work
    # The call clock alone, said in the result the verdict reads (tutor.grading.performance.Measured.note).
    from tutor.grading.performance import Measured
    from tutor.harness.lockstep import RANKS_TIMING_NOTE

    measured = Measured.from_result(result)
    assert measured.gpu_ms == {} and RANKS_TIMING_NOTE in measured.note


def test_a_rank_that_fails_is_named_in_the_grade(make_request, tmp_path):
    from tutor.runner import RunFailed

    with pytest.raises(RunFailed) as e:
        grade_in_ranks(make_request, tmp_path, """
            import torch.distributed as dist
            def prepare(weights, device):
                if dist.get_rank() == 1:
                    raise ValueError("rank one cannot load its shard")
                return weights
            def forward(state, x):
                return x * state["w"]
        """)
    assert "rank 1" in str(e.value) and "rank one cannot load its shard" in str(e.value)



def test_a_multi_gpu_workload_is_profiled_as_ranks_rank_0s_trace_the_profiles(make_request, tmp_path):
    """Profiled as it is graded, a process a rank in step: rank 0's PyTorch-profiler trace is the profile's,
    the other rank's lies beside it, and both saw the all-reduce."""
    import json

    from tutor.runner import run_harness

    request = make_request(mode="profile", mine=ALL_REDUCING)
    trace = tmp_path / "trace.json"
    request.update(ranks=2, prepare=["mine"], profile={"workload": "mine", "iterations": 2, "trace_path": str(trace)})
    result = run_harness(request, tmp_path / "run", 180, on_event=lambda event: None).result
    assert result["trace_path"] == str(trace) and result["workload"] == "mine"
    for path in (trace, tmp_path / "trace.rank1.json"):
        names = {event.get("name", "") for event in json.loads(path.read_text())["traceEvents"]}
        assert any("all_reduce" in name or "allreduce" in name for name in names), sorted(names)[:20]


def test_other_modes_of_a_multi_gpu_workload_say_they_are_not_built(make_request, tmp_path):
    from tutor.runner import RunFailed, run_harness

    request = make_request(mode="memory", mine=ALL_REDUCING)
    request.update(ranks=2, prepare=["mine"])
    with pytest.raises(RunFailed) as e:
        run_harness(request, tmp_path / "run", 120, on_event=lambda event: None)
    assert "process on each of 2 GPUs" in str(e.value) and "not built yet" in str(e.value)


@pytest.mark.gpu
def test_a_grade_runs_each_side_on_two_gpus_with_nccl(make_request, tmp_path):
    """The same grade on a 2-GPU host: each side a rank a GPU, NCCL's all-reduce in the learner's ranks."""
    import torch

    if torch.cuda.device_count() < 2:
        pytest.skip("needs 2 GPUs")
    from tutor.runner import run_harness

    request = make_request(mine="""
        import torch
        import torch.distributed as dist
        def prepare(weights, device):
            return weights
        def forward(state, x):
            y = (x * state["w"]).to(device=f"cuda:{dist.get_rank()}")
            dist.all_reduce(y)
            return (y / dist.get_world_size()).cpu()
    """)
    request.update(ranks=2, device="cuda")
    result = run_harness(request, tmp_path / "run", 300, on_event=lambda event: None).result
    print({name: [round(ms, 3) for ms in samples] for name, samples in result["samples_ms"].items()})
    assert [c["rel_l2"] for c in result["checks"]] == [0.0, 0.0] and not result["violations"]


def test_the_ranks_replies_merge_as_one_workers():
    """lockstep.merged: a round's wait is the longest (and a stall on any rank is a stall); at the end each
    sample is the slowest rank's, and what any rank was charged with or did wrong counts. No GPU time: on
    2 x H200 a rank's held GPU clock read up to 15 times the call's time under NCCL (puzzle13's MEASUREMENTS)."""
    from tutor.harness.lockstep import RANKS_TIMING_NOTE, merged

    assert merged("time", [{"waited_ms": 1.0, "checked": ["rank 0's"]}, {"waited_ms": 3.0, "checked": []}]) == \
        {"waited_ms": 3.0, "checked": ["rank 0's"]}
    assert merged("time", [{"waited_ms": 1.0, "checked": []}, {"waited_ms": -1.0, "checked": []}])["waited_ms"] == -1.0
    finish = [{"samples_ms": {"mine": [1.0, 4.0]}, "gpu_samples_ms": {"mine": [0.5, 0.5]}, "host_timed": [],
               "violations": ["a"], "clocks": "rank 0's"},
              {"samples_ms": {"mine": [2.0, 3.0]}, "gpu_samples_ms": {"mine": [0.4, 0.6]}, "host_timed": ["mine"],
               "violations": ["a", "b"], "clocks": "rank 1's"}]
    assert merged("finish", finish) == {"samples_ms": {"mine": [2.0, 4.0]}, "gpu_samples_ms": {}, "clocks": {},
                                        "timing_note": RANKS_TIMING_NOTE, "host_timed": ["mine"],
                                        "violations": ["a", "b"]}
    assert merged("run", [{"out": 0}, {"out": 1}]) == {"out": 0}  # rank 0's output is the one checked
