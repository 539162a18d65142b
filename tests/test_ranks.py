"""The multi-GPU launcher (issue 18) on the CPU, for real: two ranks forked with torch.distributed over
gloo, asked together, their collectives' results and timings gathered, a failing or stuck rank reported
with its rank and a time limit, and every rank reaped."""

from __future__ import annotations

import os
import subprocess
import time
from pathlib import Path

import pytest

from tutor.harness import processes, ranks
from tutor.harness.loading import HarnessFailure

pytestmark = pytest.mark.waits  # its tests mostly wait on purpose: spread through the run (conftest)


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


def test_a_rank_killed_at_stop_takes_nothing_else_of_its_callers_with_it():
    """A rank that does not leave at stop is killed with what it started, and nothing else of its caller's: every
    other child of a test process went with it once, the suite's warm harness among them (each later run cold)."""
    sibling = subprocess.Popen(["sleep", "120"])
    try:
        group = ranks.start(2, handler, "gloo")
        with pytest.raises(HarnessFailure):
            group.ask("hang", rank=0, limit_s=1)
        group.stop()
        assert sibling.poll() is None
    finally:
        sibling.kill()
        sibling.wait()


def rank_0_dies_at_once(rank: int) -> None:
    if rank == 0:
        os._exit(3)


def test_a_rank_0_that_dies_before_the_rendezvous_is_named_and_every_rank_reaped():
    before, started = processes._children(os.getpid()), time.monotonic()
    with pytest.raises(HarnessFailure) as e:
        ranks.start(2, handler, "gloo", in_child=rank_0_dies_at_once)
    assert e.value.kind == "crashed" and "rank 0's process ended before it opened the ranks' rendezvous" in e.value.message
    assert time.monotonic() - started < ranks.RENDEZVOUS_S  # told when it ended, not at the limit
    assert processes._children(os.getpid()) <= before  # both ranks reaped: none left running or as a zombie


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
    # Three repeats after one warm-up, where the benchmark takes 15 after 3 (read by its ranks, forked below): 4608
    # gloo all-reduces were most of this test's 19 core-seconds, and it checks the rows, not their spread.
    bench.REPEATS, bench.WARMUP = 3, 1
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
        assert int(weights["held_by"]) == dist.get_rank() and set(weights) == {"w", "held_by"}
        return weights
    def forward(state, x):
        y = x * state["w"]
        dist.all_reduce(y)
        return y / dist.get_world_size()
"""


# A multi-GPU spec says what each rank is given (tutor.harness.shards): here all of w, and whose shard it is.
RANKED_SPEC = """
RANK_SLACK_BYTES = 1 << 20
def shard(weights, rank, world):
    return {"w": weights["w"], "held_by": torch.tensor([rank])}
"""


def ranked_request(make_request, mine: str, world: int = 2, **fields) -> dict:
    request = make_request(mine=mine, **fields)
    spec = Path(request["spec"])
    spec.write_text(spec.read_text() + RANKED_SPEC)
    request["ranks"] = world
    return request


def grade_in_ranks(make_request, tmp_path, mine: str, world: int = 2):
    from tutor.runner import run_harness

    return run_harness(ranked_request(make_request, mine, world), tmp_path / "run", 180, on_event=lambda event: None)


def test_a_grade_runs_each_side_as_ranks_and_checks_every_ranks_output(make_request, tmp_path):
    """The learner's ranks all-reduce their input and divide by the world: the baseline's output, found
    only if every rank took part; every timed round is one sample, the slowest rank's. Each rank's prepare()
    was given its own shard (a rank given another's fails)."""
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
    """Profiled as it is graded, a process a rank in step (tutor.profilers.capture): rank 0's PyTorch-profiler trace
    is the profile's, the other rank's lies beside it, both saw the all-reduce, and the other rank's figures join
    the profile's as rank1.<metric>."""
    import json
    import types

    from tutor.metrics import describe
    from tutor.profilers.capture import torch_profile

    request = ranked_request(make_request, ALL_REDUCING, mode="profile")
    request.update(prepare=["mine"], profile={"workload": "mine", "iterations": 2})
    run_dir = tmp_path / "run"
    puzzle = types.SimpleNamespace(timing=types.SimpleNamespace(timeout_s=180))
    metrics, trace = torch_profile(request, run_dir, puzzle, lambda event: None, None)
    assert trace == run_dir / "trace.json"
    for path in (trace, run_dir / "trace.rank1.json"):
        names = {event.get("name", "") for event in json.loads(path.read_text())["traceEvents"]}
        assert any("all_reduce" in name or "allreduce" in name for name in names), sorted(names)[:20]
    theirs = {k.removeprefix("rank1."): v for k, v in metrics.values.items() if k.startswith("rank1.")}
    assert set(theirs) == set(metrics.values) - {"iterations"} - set(f"rank1.{k}" for k in theirs)
    assert theirs["cpu.ops_per_iter"] > 0 and describe("rank1.cpu.ops_per_iter").startswith("rank 1: ")


def test_other_modes_of_a_multi_gpu_workload_say_they_are_not_built(make_request, tmp_path):
    from tutor.runner import RunFailed, run_harness

    request = ranked_request(make_request, ALL_REDUCING, mode="memory")
    request.update(prepare=["mine"])
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

    request = ranked_request(make_request, """
        import torch
        import torch.distributed as dist
        def prepare(weights, device):
            return weights
        def forward(state, x):
            y = (x * state["w"]).to(device=f"cuda:{dist.get_rank()}")
            dist.all_reduce(y)
            return (y / dist.get_world_size()).cpu()
    """)
    spec = Path(request["spec"])  # the inputs on the rank's GPU, as its shard is
    spec.write_text(spec.read_text().replace("float(seed % 65521 + 1))", "float(seed % 65521 + 1), device=device)"))
    request.update(device="cuda")
    result = run_harness(request, tmp_path / "run", 300, on_event=lambda event: None).result
    print({name: [round(ms, 3) for ms in samples] for name, samples in result["samples_ms"].items()})
    assert [c["rel_l2"] for c in result["checks"]] == [0.0, 0.0] and not result["violations"]


def test_the_ranks_replies_merge_as_one_workers():
    """lockstep.merged: a round's wait is the longest (and a stall on any rank is a stall); at the end each
    sample is the slowest rank's, and what any rank was charged with or did wrong counts. No GPU time: on
    2 x H200 a rank's held GPU clock read up to 15 times the call's time under NCCL (puzzle13's MEASUREMENTS)."""
    from tutor.harness.lockstep import RANKS_TIMING_NOTE, merged

    assert merged("warm_call", [{"waited_ms": 1.0}, {"waited_ms": 3.0}]) == {"waited_ms": 3.0}
    assert merged("warm_call", [{"waited_ms": 1.0}, {"waited_ms": -1.0}])["waited_ms"] == -1.0
    finish = [{"samples_ms": {"mine": [1.0, 4.0]}, "gpu_samples_ms": {"mine": [0.5, 0.5]}, "host_timed": [],
               "violations": ["a"], "clocks": "rank 0's"},
              {"samples_ms": {"mine": [2.0, 3.0]}, "gpu_samples_ms": {"mine": [0.4, 0.6]}, "host_timed": ["mine"],
               "violations": ["a", "b"], "clocks": "rank 1's"}]
    assert merged("finish", finish) == {"samples_ms": {"mine": [2.0, 4.0]}, "gpu_samples_ms": {}, "clocks": {},
                                        "timing_note": RANKS_TIMING_NOTE, "host_timed": ["mine"],
                                        "violations": ["a", "b"]}
    # Every rank's output is checked: stacked rank by rank, as the oracle's ranks' are.
    import torch

    outs = [{"tensor": torch.full((3,), float(r)), "cuda": False, "strides": None} for r in range(2)]
    assert torch.equal(merged("run", [{"out": o} for o in outs])["out"]["tensor"], torch.tensor([[0.0] * 3, [1.0] * 3]))
    said = merged("run", [{"out": outs[0]}, {"out": {"problem": "forward() returned int, not a tensor"}}])["out"]
    assert said == {"problem": "rank 1: forward() returned int, not a tensor"}
    short = merged("run", [{"out": outs[0]}, {"out": {**outs[1], "tensor": torch.zeros(2)}}])["out"]["problem"]
    assert short.startswith("rank 1 returned (2,) torch.float32, rank 0 (3,) torch.float32: every rank returns")
    samples = [{"samples": [{**o, "shape": (3,), "dtype": "torch.float32", "whole": True}] * 2, "whole": o}
               for o in outs]
    joined = merged("sampled", samples)
    assert len(joined["samples"]) == 2 and all(j["shape"] == (2, 3) and j["tensor"].shape == (2, 3)
                                               for j in joined["samples"])
    assert torch.equal(joined["whole"]["tensor"], torch.tensor([[0.0] * 3, [1.0] * 3]))  # the drawn call, whole
    assert merged("sampled", [samples[0], {**samples[1], "whole": None}])["whole"] is None  # too large on a rank
    uneven = merged("sampled", [{"samples": samples[0]["samples"][:1], "whole": outs[0]}, samples[1]])
    assert "the ranks made [1, 2] calls" in uneven["samples"][0]["problem"] and "problem" in uneven["whole"]


def test_a_rank_that_returns_a_wrong_output_is_caught_though_rank_0s_is_right(make_request, tmp_path):
    """Issue 37: with rank 0's output alone checked, rank 0 could compute the whole answer while rank 1 idled, or
    rank 1 skip its collectives on calls it took for unchecked. Here rank 1 returns zeros: every check fails."""
    outcome = grade_in_ranks(make_request, tmp_path, """
        import torch
        import torch.distributed as dist
        def prepare(weights, device):
            return weights
        def forward(state, x):
            return x * state["w"] if dist.get_rank() == 0 else torch.zeros_like(x)
    """)
    result = outcome.result
    assert all(c["rel_l2"] > 0.5 for c in result["checks"] + result["timed_checks"])


def test_a_rank_may_keep_its_shard_and_its_slack_no_more():
    from tutor.harness.shards import over_shard

    assert over_shard(1, kept=(64 + 48) << 20, shard=64 << 20, slack=48 << 20) == ""
    said = over_shard(1, kept=128 << 20, shard=64 << 20, slack=48 << 20)
    assert said.startswith("rank 1 kept 128 MiB of GPU memory, more than its shard of the weights (64 MiB) and 48 MiB")


@pytest.mark.parametrize("puzzle_id", ["puzzle13", "puzzle16", "puzzle19"])
def test_each_multi_gpu_puzzle_gives_a_rank_half_the_weights_and_less_slack_than_the_other_half(puzzle_id):
    """dev check's shards check (counted on fake tensors at the real sizes): each rank is given half the model,
    and the memory a rank may keep past it is less than the other rank's half, so gathering that half is named."""
    from tutor.catalog import get_puzzle
    from tutor.dev_check import static_checks

    [shards] = [c for c in static_checks(get_puzzle(puzzle_id)) if c.name == "shards"]
    assert shards.status == "ok", shards.detail
    held = {"puzzle13": "64 MiB, 64 MiB", "puzzle16": "32 MiB, 32 MiB", "puzzle19": "224 MiB, 224 MiB"}[puzzle_id]
    assert shards.detail.startswith(f"2 ranks hold {held}; each may keep ")


@pytest.mark.parametrize("change, words", [("RANK_SLACK_BYTES = 24 << 20", "RANK_SLACK_BYTES = 32 << 20"),
                                           ("def shard(", "def _shard(")],
                         ids=["slack as large as a shard", "no shard()"])
def test_a_multi_gpu_spec_that_would_let_a_rank_keep_anothers_part_fails_dev_check(change, words, tmp_path):
    import shutil

    from tutor.catalog import get_puzzle, load_puzzle
    from tutor.dev_check import static_checks

    folder = tmp_path / "puzzle16"
    shutil.copytree(get_puzzle("puzzle16").folder, folder)
    spec = folder / "spec.py"
    assert change in spec.read_text()
    spec.write_text(spec.read_text().replace(change, words, 1))
    [shards] = [c for c in static_checks(load_puzzle(folder)) if c.name == "shards"]
    assert shards.status == "failed", shards.detail
    print(shards.detail)
