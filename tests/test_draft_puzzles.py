"""The draft puzzles (hidden until measured on the H100), as far as the CPU can check them: puzzle5's
cache written in place decodes what torch.cat's copies decode; puzzle7's batches arrive fresh in
pageable host memory and its tolerance tells fp32 from a 16-bit trip; puzzle13's styles give rank 0 the
same bits on two gloo ranks; puzzle16's handoffs give rank 0 the same bits through the host or GPU to
GPU, on two gloo ranks; puzzle18's model decides its greedy tokens by wide margins, through its cache,
and every one of its servers gives each request of a trace those tokens; puzzle19's decode step, chunked
or not, gives rank 0 the same hidden states on two gloo ranks; drafts stay out of learners' sight.

The workloads are plain torch, so the eager ones run here on the CPU for real; the graphed, compiled,
pinned and NCCL ones are the GPU's to test (the `gpu` tests here) and grade
(benchmarks/measure_draft.py).
"""

from __future__ import annotations

import math
import shutil
from pathlib import Path

import pytest
import torch

from conftest import puzzle_file, relative_l2
from tutor.catalog import all_puzzles, get_puzzle, load_puzzle
from tutor.dev_check import static_checks

P5 = get_puzzle("puzzle5", drafts=True)


def test_a_draft_is_hidden_from_learners_until_asked_for(tmp_path, monkeypatch):
    assert "puzzle5" not in all_puzzles() and "puzzle5" in all_puzzles(drafts=True)
    monkeypatch.setenv("INFPROF_DRAFTS", "1")
    assert "puzzle5" in all_puzzles()
    monkeypatch.delenv("INFPROF_DRAFTS")
    folder = tmp_path / "p"
    shutil.copytree(get_puzzle("puzzle0").folder, folder)
    assert load_puzzle(folder).draft == ""


# -- puzzle5: the cache written in place decodes what torch.cat's copies decode ------------

@pytest.mark.parametrize("workload", ["alternatives/in_place.py", "alternatives/masked_compiled.py"])
def test_puzzle5_the_cache_written_in_place_decodes_what_the_copies_decode(workload):
    spec5, baseline, other = (puzzle_file(P5, f) for f in ("spec.py", "baseline.py", workload))
    weights = spec5.make_weights(3, "cpu")
    state = other.prepare(weights, "cpu")
    if "step" in state:  # masked_compiled's module uncompiled: compiling is the GPU's to test
        state["step"] = state["module"]
    for seed in (8, 9):  # twice: a second call starts from the cache the first one left
        x = spec5.make_input(seed, "cpu")
        expected = baseline.forward(weights, x)
        got = other.forward(state, x)
        rel = relative_l2(got, expected)
        print(f"{workload} vs baseline: relative L2 {rel:.2e}")
        assert expected.shape == (spec5.BATCH, spec5.STEPS, spec5.HIDDEN) and rel < P5.correctness.max_rel_l2 / 10


def test_puzzle5_is_a_draft_whose_folder_checks_pass():
    checks = {c.name: c for c in static_checks(P5)}
    assert "puzzle5" not in all_puzzles() and checks["recordings"].status == "skipped"
    assert all(c.status != "failed" for c in checks.values()), [c for c in checks.values() if c.status == "failed"]


# -- puzzle7: batches that arrive in pageable host memory -----------------------------------------------

P7 = get_puzzle("puzzle7", drafts=True)


def test_puzzle7_batches_arrive_fresh_on_the_host():
    spec7 = puzzle_file(P7, "spec.py")
    first, again, other = (spec7.make_input(seed, "cpu") for seed in (1, 1, 2))  # on a GPU too (the gpu test below)
    assert len(first) == spec7.BATCHES and all(b.device.type == "cpu" and b.dtype == torch.float32 for b in first)
    assert first[0].shape == (spec7.ROWS, spec7.FEATURES)
    assert torch.equal(first[0], again[0]) and not torch.equal(first[0], other[0])
    assert first[0].data_ptr() != again[0].data_ptr()  # a new buffer every call: nothing pinned ahead of it


def test_puzzle7s_tolerance_passes_fp32_in_any_order_and_fails_a_16_bit_trip():
    """On 1024 rows of two batches: the scores batched in one matmul, and after a trip through fp16."""
    spec7, baseline = puzzle_file(P7, "spec.py"), puzzle_file(P7, "baseline.py")
    w = spec7.make_weights(1, "cpu")
    xs = [b[:1024] for b in spec7.make_input(2, "cpu")[:2]]
    expected = baseline.forward(w, xs)
    rel = lambda got: relative_l2(got, expected)  # noqa: E731
    batched = torch.relu(torch.stack(xs) @ w["w1"]) @ w["w2"]
    in_float64 = baseline.forward({k: v.double() for k, v in w.items()}, [x.double() for x in xs]).float()
    assert rel(batched) < P7.correctness.max_rel_l2 / 10 and rel(in_float64) < P7.correctness.max_rel_l2 / 10
    assert rel(baseline.forward(w, [x.half().float() for x in xs])) > 5 * P7.correctness.max_rel_l2


def test_puzzle7_is_a_draft_whose_folder_checks_pass():
    checks = {c.name: c for c in static_checks(P7)}
    assert "puzzle7" not in all_puzzles() and checks["recordings"].status == "skipped"
    assert checks["floor"].status == "ok"  # bytes across the host link, not HBM or FLOPs
    assert all(c.status != "failed" for c in checks.values()), [c for c in checks.values() if c.status == "failed"]


@pytest.mark.gpu
@pytest.mark.parametrize("workload", ["solution/workload.py", "alternatives/pinned_at_once.py",
                                      "alternatives/one_stream.py"])
def test_puzzle7_every_honest_style_scores_what_the_baseline_scores(workload):
    spec7, baseline, other = (puzzle_file(P7, f) for f in ("spec.py", "baseline.py", workload))
    w = spec7.make_weights(3, "cuda")
    state = other.prepare(w, "cuda")
    for seed in (4, 5):  # twice: the second call reuses the buffers and events of the first
        xs = spec7.make_input(seed, "cuda")
        assert all(b.device.type == "cpu" and not b.is_pinned() for b in xs)  # pageable, on the host
        expected, got = baseline.forward(w, xs), other.forward(state, xs)
        rel = relative_l2(got, expected)
        print(workload, f"relative L2 {rel:.2e}")
        assert rel < P7.correctness.max_rel_l2


# -- puzzle13: a tensor-parallel MLP that all-reduces one request at a time (two gloo ranks on the CPU) ------

P13 = get_puzzle("puzzle13", drafts=True)
# The coalescing manager is NCCL's: gloo does not implement it, so that style is the GPUs' to check.
P13_STYLES = ["baseline.py", "solution/workload.py", "alternatives/buckets.py", "alternatives/coalesced.py"]


def _on_two_ranks(handler, backend: str) -> list[dict]:
    """Two ranks, as the grade runs them (tutor.harness.ranks), each running every style of a multi-GPU puzzle
    (`handler`). The replies, rank by rank."""
    from tutor.harness import ranks

    if backend == "nccl" and torch.cuda.device_count() < 2:
        pytest.skip("needs 2 GPUs")
    group = ranks.start(2, handler, backend)
    try:
        return group.ask("styles")
    finally:
        group.stop()


def _styles_on_two_ranks(handler, backend: str) -> list[dict]:
    """_on_two_ranks, where every style's output is the baseline's to the bit on each rank."""
    replies = _on_two_ranks(handler, backend)
    for reply in replies:
        baseline = reply["outputs"]["baseline.py"]
        assert all(torch.equal(out, baseline) for out in reply["outputs"].values()), \
            [s for s, out in reply["outputs"].items() if not torch.equal(out, baseline)]
    return replies


def _puzzle13_rank(rank: int, world: int, message: dict) -> dict:
    """In a rank: puzzle13's styles on the same batch (small on the CPU), each output as this rank returns it."""
    import torch.distributed as dist

    spec13 = puzzle_file(P13, "spec.py")
    device = "cpu" if dist.get_backend() == "gloo" else "cuda"
    if device == "cpu":
        spec13.BATCH, spec13.HIDDEN, spec13.FFN = 64, 128, 256  # the same split, a CPU's share of it
    weights, x = spec13.make_weights(1, device), spec13.make_input(2, device)
    outputs = {}
    for style in P13_STYLES[:3] if device == "cpu" else P13_STYLES:
        module = puzzle_file(P13, style)
        outputs[style] = module.forward(module.prepare(weights, "cpu"), x)
    unsplit = torch.relu(x @ weights["w1"]) @ weights["w2"]
    return {"outputs": {k: v.cpu() for k, v in outputs.items()}, "unsplit": unsplit.cpu()}


@pytest.mark.parametrize("backend", ["gloo", pytest.param("nccl", marks=pytest.mark.gpu)])
def test_puzzle13_every_style_gives_rank_0_the_baselines_output_bit_for_bit(backend):
    """Two ranks, as the grade runs them (tutor.harness.ranks): the bucketing of the sum changes no bit
    (a + b, two ranks), and the halves add up to the unsplit MLP up to bf16's rounding of the split sum."""
    replies = _styles_on_two_ranks(_puzzle13_rank, backend)
    assert relative_l2(replies[0]["outputs"]["baseline.py"], replies[0]["unsplit"]) < 2e-2


# -- puzzle16: a two-stage pipeline that hands its activations over through the host (two gloo ranks on the CPU) --

P16 = get_puzzle("puzzle16", drafts=True)
P16_STYLES = ["baseline.py", "solution/workload.py", "alternatives/broadcast_both_ways.py",
              "alternatives/batched_p2p.py"]


def _puzzle16_rank(rank: int, world: int, message: dict) -> dict:
    """In a rank: puzzle16's styles on the same microbatch (small on the CPU), each output as this rank returns it."""
    import torch.distributed as dist

    spec16 = puzzle_file(P16, "spec.py")
    device = "cpu" if dist.get_backend() == "gloo" else "cuda"
    if device == "cpu":
        spec16.TOKENS, spec16.HIDDEN = 64, 128  # the same stages, a CPU's share of them
    weights, x = spec16.make_weights(1, device), spec16.make_input(2, device)
    outputs = {}
    for style in P16_STYLES:
        module = puzzle_file(P16, style)
        outputs[style] = module.forward(module.prepare(weights, device), x)
    unsplit = torch.nn.functional.gelu(x @ weights["w0"]) @ weights["w1"]
    return {"outputs": {k: v.cpu() for k, v in outputs.items()}, "unsplit": unsplit.cpu()}


@pytest.mark.parametrize("backend", ["gloo", pytest.param("nccl", marks=pytest.mark.gpu)])
def test_puzzle16_every_style_gives_rank_0_the_baselines_output_bit_for_bit(backend):
    """Two ranks, as the grade runs them (tutor.harness.ranks): every handoff moves the same bytes, so every
    style's output is the baseline's to the bit on both ranks, and it is the unsplit block's."""
    replies = _styles_on_two_ranks(_puzzle16_rank, backend)
    assert torch.equal(replies[0]["outputs"]["baseline.py"], replies[0]["unsplit"])



# -- puzzle19: a tensor-parallel decode step chunked for overlap (two gloo ranks on the CPU) ---------------------

P19 = get_puzzle("puzzle19", drafts=True)
P19_STYLES = ["baseline.py", "solution/workload.py", "alternatives/two_chunks.py", "alternatives/graphed_step.py"]


def _puzzle19_rank(rank: int, world: int, message: dict) -> dict:
    """In a rank: puzzle19's styles on the same step (narrower layers on the CPU), each output as this rank
    returns it, and the unsplit layers' output."""
    import torch.distributed as dist

    spec19 = puzzle_file(P19, "spec.py")
    device = "cpu" if dist.get_backend() == "gloo" else "cuda"
    if device == "cpu":
        spec19.HIDDEN, spec19.FFN = 128, 256  # the same 16 tokens and 2 layers, a CPU's share of the width
    weights, x = spec19.make_weights(1, device), spec19.make_input(2, device)
    outputs = {}
    for style in P19_STYLES:
        module = puzzle_file(P19, style)
        outputs[style] = module.forward(module.prepare(weights, device), x)
    unsplit = x
    for layer in weights["layers"]:
        unsplit = unsplit + torch.relu(unsplit @ layer["w1"]) @ layer["w2"]
    return {"outputs": {k: v.cpu() for k, v in outputs.items()}, "unsplit": unsplit.cpu()}


@pytest.mark.parametrize("backend", ["gloo", pytest.param("nccl", marks=pytest.mark.gpu)])
def test_puzzle19_every_style_gives_rank_0_the_baselines_step_within_its_tolerance(backend):
    """Two ranks, as the grade runs them (tutor.harness.ranks): chunked or not, graphed or not, every style's
    hidden states are the baseline's within the puzzle's tolerance on each rank, and the unsplit layers'."""
    replies = _on_two_ranks(_puzzle19_rank, backend)
    for reply in replies:
        baseline = reply["outputs"]["baseline.py"]
        errors = {style: relative_l2(out, baseline) for style, out in reply["outputs"].items()}
        print(backend, errors)
        assert max(errors.values()) < P19.correctness.max_rel_l2, errors
        assert relative_l2(baseline, reply["unsplit"]) < 2e-2
    assert torch.equal(replies[0]["outputs"]["baseline.py"], replies[1]["outputs"]["baseline.py"])


# -- puzzle18: a decoder's server that batches statically (the model's margins, every server's tokens on the CPU) --

P18 = get_puzzle("puzzle18", drafts=True)
P18_SERVERS = ["baseline.py", "solution/workload.py", "alternatives/small_static_batches.py",
               "alternatives/larger_static_batches.py", "alternatives/continuous_full_slots.py"]


def _chain(spec, seed: int, prompt: list[int], max_new: int) -> list[int]:
    """The tokens every server must give with the weights of `seed`: the successors of the prompt's last state,
    in its topic."""
    topic, state = divmod(prompt[-1] - spec.TOPICS, spec.STATES)
    following, tokens = spec.successor(seed), []
    for _ in range(max_new):
        state = int(following[state])
        tokens.append(spec.token(state, topic))
    return tokens


def _decode_alone(spec, w: dict, prompt: list[int], steps: int, read_cache: bool = True):
    """One request decoded alone in bf16 as the servers compute a step: its tokens, and each step's lead of the
    best logit over the next. Without `read_cache`, head 0's values are zeroed: the topic is never read."""
    tokens, leads = list(prompt), []
    wv = w["wv"].clone()
    if not read_cache:
        wv[:spec.HEAD_DIM] = 0
    for _ in range(steps):
        x = w["embed"][torch.tensor(tokens)]
        q = (x[-1:] @ w["wq"].T).view(1, spec.HEADS, spec.HEAD_DIM).float()
        k = (x @ w["wk"].T).view(-1, spec.HEADS, spec.HEAD_DIM).float()
        v = (x @ wv.T).view(-1, spec.HEADS, spec.HEAD_DIM).float()
        p = (torch.einsum("qhd,thd->qht", q, k) / math.sqrt(spec.HEAD_DIM)).softmax(-1)
        attended = torch.einsum("qht,thd->qhd", p, v).reshape(1, -1).to(torch.bfloat16)
        hidden = torch.relu(x[-1:] @ w["w1"].T) @ w["w2"].T + attended @ w["wo"].T
        top = (hidden @ w["out"].T).float()[0].topk(2)
        leads.append(float(top.values[0] - top.values[1]))
        tokens.append(int(top.indices[0]))
    return tokens[len(prompt):], leads


def test_puzzle18_greedy_tokens_follow_the_chain_by_a_wide_margin_and_need_the_cache():
    spec = puzzle_file(P18, "spec.py")
    w = spec.make_weights(1, "cpu")
    g = torch.Generator().manual_seed(3)
    for topic in range(spec.TOPICS):
        length = int(torch.randint(1, 60, (1,), generator=g))
        prompt = [topic, *(spec.token(int(s), topic) for s in torch.randint(spec.STATES, (length,), generator=g))]
        tokens, leads = _decode_alone(spec, w, prompt, 8)
        assert tokens == _chain(spec, 1, prompt, 8) and min(leads) > 150, (topic, leads)
        assert tokens != _chain(spec, 4, prompt, 8)  # another grade's weights, another chain
        _, blind = _decode_alone(spec, w, prompt, 2, read_cache=False)
        assert max(blind) < 1  # the 8 topics' tokens of the right state tie: only the cache tells them apart


def test_puzzle18_a_trace_arrives_over_time_with_heavy_tailed_lengths():
    spec = puzzle_file(P18, "spec.py")
    trace = spec.make_trace(1)
    arrivals = [q["arrival_s"] for q in trace]
    assert len(trace) == spec.REQUESTS == 512 and arrivals[0] == 0 and arrivals == sorted(arrivals)
    assert 0.8 < arrivals[-1] < 1.8  # 512 at 400 a second
    outputs = sorted(q["max_new"] for q in trace)
    assert 16 <= outputs[256] <= 64 and outputs[-1] >= 5 * outputs[256] and outputs[-1] <= spec.OUTPUT_MAX == 256
    for q in trace:  # a topic token, then states of that topic only
        topic = q["prompt"][0]
        assert topic < spec.TOPICS and 2 <= len(q["prompt"]) <= spec.PROMPT_MAX
        assert all(divmod(t - spec.TOPICS, spec.STATES)[0] == topic for t in q["prompt"][1:])


@pytest.mark.parametrize("server_file", P18_SERVERS)
def test_puzzle18_every_server_gives_every_request_the_chains_tokens(monkeypatch, server_file):
    from tutor.harness import serving

    spec = puzzle_file(P18, "spec.py")
    for name, value in (("REQUESTS", 12), ("RATE", 300.0), ("PROMPT_MAX", 40), ("OUTPUT_MAX", 24)):
        monkeypatch.setattr(spec, name, value)  # the same draw, a CPU's share of it
    module = puzzle_file(P18, server_file)
    if hasattr(module, "CONTEXT"):
        monkeypatch.setattr(module, "CONTEXT", 128)  # the cache a CPU's share too: 40 + 24 positions at most
    server = module.server(module.prepare(spec.make_weights(2, "cpu"), "cpu"))
    served = serving.replay(serving.trace_of(spec.make_trace(5)), server.submit, server.step, limit_s=300)
    chains = {s.request.rid: _chain(spec, 2, list(s.request.prompt), s.request.max_new) for s in served}
    wrong = [s.request.rid for s in served if s.tokens != chains[s.request.rid]]
    assert not wrong and sum(len(s.tokens) for s in served) > 12


@pytest.mark.parametrize("puzzle_id, recorded", [("puzzle13", False), ("puzzle16", True), ("puzzle18", True),
                                                 ("puzzle19", True)])
def test_a_draft_passes_its_folder_checks_with_or_without_recordings(puzzle_id, recorded):
    checks = {c.name: c for c in static_checks(get_puzzle(puzzle_id, drafts=True))}
    assert puzzle_id not in all_puzzles() and checks["recordings"].status == ("ok" if recorded else "skipped")
    assert all(c.status != "failed" for c in checks.values()), [c for c in checks.values() if c.status == "failed"]


def test_the_device_script_names_only_puzzles_and_files_that_exist():
    """benchmarks/device_unverified.sh runs on a GPU lent for minutes: a draft renamed or a sweep moved must
    fail here, not there. Every puzzle it measures or grades is in the catalog (drafts too), every file
    it runs exists, and bash can parse it."""
    import re
    import subprocess

    root = Path(__file__).parents[1]
    script = (root / "benchmarks" / "device_unverified.sh").read_text()
    assert subprocess.run(["bash", "-n", str(root / "benchmarks" / "device_unverified.sh")]).returncode == 0
    puzzles = set(re.findall(r"\b(?:measure|grades|grade_latency\.py|dev check)\s+(puzzle\d+)", script))
    assert {"puzzle9", "puzzle10"} <= puzzles and puzzles <= set(all_puzzles(drafts=True))
    files = set(re.findall(r"\b((?:benchmarks|challenges|tests)/[\w/.-]+\.py)\b", script))
    assert len(files) >= 6 and all((root / f).is_file() for f in files), [f for f in files if not (root / f).is_file()]
    graded = re.findall(r"grades (puzzle\d+) alternatives/(\w+)", script)  # one solution graded alone
    graded += [(pid, name) for pid, names in re.findall(r"regrade (puzzle\d+)((?: alternatives/\w+)+)", script)
               for name in re.findall(r"alternatives/(\w+)", names)]
    assert graded and all(name in get_puzzle(pid, drafts=True).alternatives for pid, name in graded), graded


@pytest.mark.parametrize("cheat", ["host_table", "gpu_table"])
def test_puzzle18s_cheats_serve_every_right_token_without_the_model(cheat):
    """The cheats a serving grade's floor is held against (cheats/, MEASUREMENTS.md): the successor map read off
    the weights once, then a token a request a step from it, the model never run. The tokens are right and
    come one a step, so correctness and the harness's rules pass them: on a GPU, host_table leaves it idle
    (refused by the floor, tests/test_serving_floor.py), gpu_table runs a gather a step (not refused)."""
    from tutor.harness import serving

    spec, workload = puzzle_file(P18, "spec.py"), puzzle_file(P18, f"cheats/{cheat}.py")
    state = workload.prepare(spec.make_weights(2, "cpu"), "cpu")
    trace = serving.trace_of(spec.make_trace(5))
    server = workload.server(state)
    served = serving.replay(trace, server.submit, server.step, limit_s=300)
    assert all(s.tokens == _chain(spec, 2, list(s.request.prompt), s.request.max_new) for s in served)
    assert 0.1e12 < spec.least_flops([(len(r.prompt), r.max_new) for r in trace]) < 1e12


def test_puzzle18s_recording_shows_requests_waiting_on_batches_and_rows_idle():
    """The baseline's serving profile on the H100 (device part 27), read here as there: a request waits nearly
    all its latency for its first token, a step makes about 4 tokens of the 16 rows a batch holds, and the
    GPU idles while the host runs each step (launch overhead, the supporting diagnosis)."""
    import json

    from conftest import recording
    from tutor.profilers.torch_trace import extract

    recorded = json.loads(recording("puzzle18", "metrics.json").read_text())["values"]
    v = extract(recording("puzzle18", "trace.json.gz")).values
    assert {k: v[k] for k in v} == {k: recorded[k] for k in v}  # the same reading here as on the H100
    assert v["iterations"] == 300  # the profiled window of steps (tutor.harness.serving.profiled_window)
    assert recorded["serving.requests"] == 512 and recorded["serving.tokens_per_step"] < 16 / 3
    assert recorded["serving.waited_p99_s"] > 0.9 * recorded["serving.latency_p99_s"]
    assert v["gpu.busy_fraction"] < 0.3 and v["cpu.time_per_iter_us"] > 4 * v["gpu.time_per_iter_us"]


def test_puzzle18s_reference_diagnosis_passes_on_its_recording(workspace):
    import json

    from conftest import recording
    from tutor.reference import install_reference
    from tutor.study import grade_diagnosis

    recorded = json.loads(recording("puzzle18", "metrics.json").read_text())["values"]
    workspace.reset(P18)  # a draft's folder: a workspace copies only the puzzles learners see
    install_reference(workspace, P18, recorded)
    verdict = grade_diagnosis(workspace, P18)
    assert verdict.passed, verdict.criteria[0].details


def test_puzzle18s_h100_grades_read_each_style_at_its_tier_under_todays_bars():
    """Two grades a style on the H100 (device parts 27 and 37; MEASUREMENTS.md), each re-read from its five
    replay pairs by the serving rules: the reference gold, continuous batching over every slot silver,
    larger static batches bronze, smaller ones nothing (their p99 latency 2.7x the baseline's)."""
    import json

    from test_grading_rules import reached

    grades = json.loads((Path(__file__).parent / "fixtures" / "h100_puzzle18_grades_2026-11-26.json").read_text())
    read = {}
    for g in grades:
        tier = reached(g)  # from its replay pairs, as tutor.grading.serving reads a grade
        assert tier == g["tier_then"], g
        read.setdefault(g["which"], set()).add(tier or "none")
    assert read == {"reference": {"gold"}, **{f"alternatives/{name}": {tier}
                                              for name, tier in P18.alternatives.items()}}, read


def test_puzzle18s_traces_spread_its_ratio_less_than_the_h100_saw():
    """The first H100 grade's five pairs read 3.40-5.49x (256 requests, outputs up to 1024: a replay's length
    was its longest request's). Counted in steps over 20 traces of today's spec (sweeps/trace_spread.py), the
    reference's ratio stays within 15% of its median, and larger static batches fall short of it."""
    import statistics

    sweep, spec = puzzle_file(P18, "sweeps/trace_spread.py"), puzzle_file(P18, "spec.py")
    reference, larger = [], []
    for seed in range(20):
        trace = spec.make_trace(seed)
        arrivals, outputs = [r["arrival_s"] for r in trace], [r["max_new"] for r in trace]
        base, _ = sweep.static(arrivals, outputs, 16, 0.005)
        reference.append(base / sweep.continuous(arrivals, outputs, 64)[0])
        larger.append(base / sweep.static(arrivals, outputs, 64, 0.005)[0])
    middle = statistics.median(reference)
    assert max(reference) / min(reference) < 1.15 and max(larger) < 0.8 * middle, (reference, larger)


@pytest.mark.parametrize("puzzle_id", ["puzzle16", "puzzle19"])
def test_the_2_gpu_drafts_h200_grades_read_each_style_at_its_tier_under_todays_bars(puzzle_id):
    """Their first grades on 2 x H200 (device parts 20 and 35; MEASUREMENTS.md): each grade's tier again from its
    speed-up's interval under puzzle.toml's bars, as it read then, each style at the tier the toml expects."""
    import json

    from test_grading_rules import reached

    puzzle = get_puzzle(puzzle_id, drafts=True)
    fixture = Path(__file__).parent / "fixtures" / f"h200x2_grades_{puzzle_id}_2026-11-26.json"
    grades = json.loads(fixture.read_text())
    read = {}
    for g in grades:
        assert reached(g) == g["tier_then"], g
        read.setdefault(g["which"], set()).add(reached(g) or "none")
    expected = {f"alternatives/{name}": {tier} for name, tier in puzzle.alternatives.items()}
    assert read == {"reference": {"gold"}, **expected}


def test_the_2_gpu_drafts_recordings_show_what_their_diagnosis_cites():
    """Rank 0's baseline profiles on 2 x H200 (device parts 20 and 35), read here as there: puzzle16's two 8 MB
    copies through pageable host memory a call, the GPU mostly idle; puzzle19's 52 kernels a call, NCCL's
    all-reduces a seventh of its GPU time beside the matmuls that read the weights four times."""
    import json

    from conftest import recording
    from tutor.profilers.torch_trace import extract

    for puzzle_id in ("puzzle16", "puzzle19"):
        recorded = json.loads(recording(puzzle_id, "metrics.json").read_text())["values"]
        v = extract(recording(puzzle_id, "trace.json.gz")).values
        assert {k: v[k] for k in v} == {k: recorded[k] for k in v}, puzzle_id
    p16 = json.loads(recording("puzzle16", "metrics.json").read_text())["values"]
    assert p16["memcpy.pageable_per_iter"] == 2 and p16["memcpy.d2h_bytes_per_iter"] == 8 << 20
    assert p16["kernels.category.memcpy.share"] > 0.9 and p16["gpu.busy_fraction"] < 0.2
    p19 = json.loads(recording("puzzle19", "metrics.json").read_text())["values"]
    assert p19["kernels.per_iter"] == 52 and 0.1 < p19["kernels.category.comm.share"] < 0.2
    assert p19["kernels.category.gemm.share"] > 0.75
