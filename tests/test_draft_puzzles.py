"""The draft puzzles (hidden until measured on the H100), as far as the CPU can check them: puzzle5's
cache written in place decodes what torch.cat's copies decode; puzzle7's batches arrive fresh in
pageable host memory and its tolerance tells fp32 from a 16-bit trip; puzzle12's kernels compile and
torch's transposed copy is exact; puzzle13's styles give rank 0 the same bits on two gloo ranks;
puzzle14's warps in arrival order nearly all wait on a rank-512 lane, and its reference is the baseline's
kernel in another order; puzzle15's blocks hold an SM alone, 136 of them, and its reference is the
baseline's kernel over a finer grid; puzzle16's handoffs give rank 0 the same bits through the host or
GPU to GPU, on two gloo ranks; puzzle17's reference is the baseline but for its block numbers; drafts
stay out of learners' sight.

The workloads are plain torch, so the eager ones run here on the CPU for real; the graphed, compiled,
pinned and hand-written CUDA ones are the GPU's to test (the `gpu` tests here) and grade
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


# -- puzzle12: a transpose whose warps read 32 rows (ptxas and the copy's semantics on the CPU) ------------

P12 = get_puzzle("puzzle12", drafts=True)


@pytest.mark.skipif(shutil.which("nvcc") is None, reason="needs nvcc (the CUDA toolkit); no GPU")
@pytest.mark.parametrize("workload", ["baseline.py", "solution/workload.py"])
def test_puzzle12_every_kernel_compiles_for_the_h100_and_spills_nothing(tmp_path, workload):
    from tutor.profilers import ptxas

    source = tmp_path / "kernel.cu"
    source.write_text(puzzle_file(P12, workload).KERNEL)
    [kernel] = ptxas.compile_report(source)
    print(workload, kernel)
    assert kernel.spill_store_bytes == 0 and kernel.registers <= 64


def test_puzzle12_the_library_transpose_is_the_keys_exactly(monkeypatch):
    spec12, library = puzzle_file(P12, "spec.py"), puzzle_file(P12, "alternatives/library_transpose.py")
    monkeypatch.setattr(spec12, "TOKENS", 256)  # the same draw, fewer tokens: the CPU's share
    keys = spec12.make_input(1, "cpu")
    got = library.forward(library.prepare({}, "cpu"), keys)
    assert got.shape == (spec12.DIM, 256) and got.is_contiguous() and torch.equal(got, keys.T)
    # The shapes tile exactly: the tiled kernels (32 and 64 a side) need no edge handling.
    assert spec12.TOKENS % 64 == 0 and spec12.DIM % 64 == 0


def test_puzzle12s_recordings_show_a_warp_asking_for_32_sectors_a_load():
    """What its hints send the learner to find (recorded on an H200, MEASUREMENTS.md): 32 sectors a global
    load against the tile's 4, L2 catching the rest, and DRAM moving no more bytes than the fixed kernel."""
    from tutor.profilers import ncu

    baseline = ncu.extract(P12.recordings_dir / "h100_baseline_ncu.csv").values
    reference = ncu.extract(Path(__file__).parent / "fixtures" / "h200_puzzle12_reference_ncu.csv").values
    assert baseline["ncu.global_load_sectors_per_request"] == 32 and reference["ncu.global_load_sectors_per_request"] == 4
    assert baseline["ncu.l2_hit_rate_pct"] > 80 and baseline["ncu.dram_bytes"] < 1.1 * reference["ncu.dram_bytes"]
    assert baseline["ncu.duration_us"] > 2 * reference["ncu.duration_us"]


@pytest.mark.gpu
@pytest.mark.parametrize("workload", ["solution/workload.py", "alternatives/triton_tiles.py",
                                      "alternatives/library_transpose.py"])
def test_puzzle12_every_style_gives_the_keys_transposed_exactly(workload):
    spec12, other = puzzle_file(P12, "spec.py"), puzzle_file(P12, workload)
    keys = spec12.make_input(2, "cuda")
    got = other.forward(other.prepare({}, "cuda"), keys)
    print(workload, tuple(got.shape))
    assert torch.equal(got, keys.T.contiguous())


# -- puzzle13: a tensor-parallel MLP that all-reduces one request at a time (two gloo ranks on the CPU) ------

P13 = get_puzzle("puzzle13", drafts=True)
# The coalescing manager is NCCL's: gloo does not implement it, so that style is the GPUs' to check.
P13_STYLES = ["baseline.py", "solution/workload.py", "alternatives/buckets.py", "alternatives/coalesced.py"]


def _styles_on_two_ranks(handler, backend: str) -> list[dict]:
    """Two ranks, as the grade runs them (tutor.harness.ranks), each running every style of a multi-GPU puzzle
    (`handler`); every style's output is the baseline's to the bit on each rank. The replies, rank by rank."""
    from tutor.harness import ranks

    if backend == "nccl" and torch.cuda.device_count() < 2:
        pytest.skip("needs 2 GPUs")
    group = ranks.start(2, handler, backend)
    try:
        replies = group.ask("styles")
    finally:
        group.stop()
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


# -- puzzle14: a calibration whose lanes loop as long as their own tenant's curve (ptxas and the maths on the CPU) --

P14 = get_puzzle("puzzle14", drafts=True)
P14_KERNELS = ["baseline.py", "solution/workload.py", "alternatives/lanes_share_a_candidate.py"]


def _calibrated(weights: dict, scores: torch.Tensor, tenant: torch.Tensor) -> torch.Tensor:
    """The tenants' curves in float64 on the CPU: each candidate's sum over its own tenant's terms."""
    t = tenant.long()
    u, b, v = (weights[k].double()[t] for k in ("u", "b", "v"))  # [n, MAX_RANK], zero past each rank
    return (v * torch.tanh(scores.double()[:, None] * u + b)).sum(1)


@pytest.mark.skipif(shutil.which("nvcc") is None, reason="needs nvcc (the CUDA toolkit); no GPU")
@pytest.mark.parametrize("workload", P14_KERNELS)
def test_puzzle14_every_kernel_compiles_for_the_h100_and_spills_nothing(tmp_path, workload):
    from tutor.profilers import ptxas

    source = tmp_path / "kernel.cu"
    source.write_text(puzzle_file(P14, workload).KERNEL)
    [kernel] = ptxas.compile_report(source)
    print(workload, kernel)
    assert kernel.spill_store_bytes == 0 and kernel.registers <= 64


def test_puzzle14_the_reference_runs_the_baselines_kernel_in_another_order():
    """The lesson is the order alone: the reference's kernel and launcher are the baseline's, to the byte."""
    baseline, reference = puzzle_file(P14, "baseline.py"), puzzle_file(P14, "solution/workload.py")
    assert (reference.KERNEL, reference.LAUNCHER) == (baseline.KERNEL, baseline.LAUNCHER)


def test_puzzle14_almost_every_warp_in_arrival_order_holds_a_candidate_of_the_longest_curve(monkeypatch):
    """The story's arithmetic on a real draw: tenants uniform, 80 terms a candidate on average, and nearly
    every warp of 32 neighbours waiting on a rank-512 lane (1 - (7/8)^32 = 98.6%)."""
    spec = puzzle_file(P14, "spec.py")
    monkeypatch.setattr(spec, "TOKENS", 1 << 16)
    scores, tenant = spec.make_input(1, "cpu")
    ranks = torch.tensor(spec.RANKS)[tenant.long()]
    assert scores.dtype == torch.float32 and tenant.dtype == torch.int32 and len(torch.unique(tenant)) == 8
    assert abs(ranks.double().mean().item() - 80) < 2
    warps = ranks.view(-1, 32)
    assert (warps.max(1).values == 512).double().mean().item() > 0.97
    # The waste the profile shows: useful lane-turns over the turns the warps take, about 80 / 512.
    assert 0.14 < (warps.sum(1) / (32 * warps.max(1).values)).double().mean().item() < 0.2


def test_puzzle14_every_term_counts_and_none_past_a_tenants_rank(monkeypatch):
    spec = puzzle_file(P14, "spec.py")
    w = spec.make_weights(2, "cpu")
    ranks = w["ranks"].tolist()
    assert ranks == list(spec.RANKS)
    for t, r in enumerate(ranks):
        assert not w["v"][t, r:].any() and w["v"][t, r - 1] != 0
    # A curve cut to its first half misses by far more than the tolerance: the tail is not negligible.
    monkeypatch.setattr(spec, "TOKENS", 4096)
    scores, tenant = spec.make_input(3, "cpu")
    full = _calibrated(w, scores, tenant)
    half = dict(w, v=w["v"] * (torch.arange(spec.MAX_RANK) < torch.tensor(ranks)[:, None] // 2))
    cut = _calibrated(half, scores, tenant)
    assert relative_l2(cut, full) > 1000 * P14.correctness.max_rel_l2


def test_puzzle14_the_reference_puts_every_result_back_in_its_arrival_slot(monkeypatch):
    """The reference's torch half on the CPU (sort, gather, scatter), its kernel stood in for by the maths:
    every candidate gets its own curve's value, as in arrival order."""
    spec, reference = puzzle_file(P14, "spec.py"), puzzle_file(P14, "solution/workload.py")
    monkeypatch.setattr(spec, "TOKENS", 1 << 14)
    w = spec.make_weights(4, "cpu")
    scores, tenant = spec.make_input(5, "cpu")

    class Maths:  # the kernel's run(), in float64 on the CPU
        @staticmethod
        def run(s, t, u, b, v, ranks):
            assert torch.equal(t, torch.sort(t, stable=True).values)  # it is handed the sorted order
            return _calibrated({"u": u, "b": b, "v": v}, s, t).float()

    got = reference.forward({"kernel": Maths, **w}, (scores, tenant))
    assert torch.allclose(got.double(), _calibrated(w, scores, tenant), rtol=1e-6, atol=1e-6)


@pytest.mark.gpu
@pytest.mark.parametrize("workload", [*P14_KERNELS, "alternatives/triton_sorted.py"])
def test_puzzle14_every_style_calibrates_every_candidate(workload):
    spec, other = puzzle_file(P14, "spec.py"), puzzle_file(P14, workload)
    w = spec.make_weights(3, "cuda")
    batch = spec.make_input(4, "cuda")
    exact = _calibrated({k: x.cpu() for k, x in w.items()}, *(x.cpu() for x in batch))
    got = other.forward(other.prepare(w, "cuda"), batch).cpu().double()
    rel = relative_l2(got, exact)
    print(workload, f"relative L2 {rel:.2e}")
    assert rel < P14.correctness.max_rel_l2


# -- puzzle15: a matmul of 136 long blocks on 132 SMs (ptxas, the grid's arithmetic and split-K's sums on the CPU) --

P15 = get_puzzle("puzzle15", drafts=True)
P15_KERNELS = ["baseline.py", "solution/workload.py", "alternatives/split_k_atomics.py"]
H100_SMS = 132


@pytest.mark.skipif(shutil.which("nvcc") is None, reason="needs nvcc (the CUDA toolkit); no GPU")
@pytest.mark.parametrize("workload", P15_KERNELS)
def test_puzzle15_every_kernel_holds_an_sm_alone_and_spills_nothing(tmp_path, workload):
    """One block an SM by both of its limits: its registers (1024 threads of a 65536-register file) and its
    133 KB of shared memory (an H100 SM has 228 KB), so the grid's waves are its blocks over 132."""
    import re

    from tutor.profilers import ptxas

    module = puzzle_file(P15, workload)
    source = tmp_path / "kernel.cu"
    source.write_text(module.KERNEL)
    [kernel] = ptxas.compile_report(source)
    print(workload, kernel)
    assert kernel.spill_store_bytes == 0 and 32 < kernel.registers <= 64  # 64 x 1024 = the whole file
    t, slab = (int(re.search(rf"\b{name} = (\d+)", module.KERNEL).group(1)) for name in ("T", "SLAB"))
    assert 228 * 1024 // 2 < (t * (slab + 1) + slab * (t + 1)) * 4 <= 227 * 1024


def test_puzzle15_the_reference_runs_the_baselines_kernel_over_a_finer_grid():
    """The lesson is the cut alone: the reference's kernel and launcher are the baseline's, to the byte; its
    splits divide the features into whole slabs and make the last wave short."""
    import re

    spec, baseline, reference = (puzzle_file(P15, f) for f in ("spec.py", "baseline.py", "solution/workload.py"))
    assert (reference.KERNEL, reference.LAUNCHER) == (baseline.KERNEL, baseline.LAUNCHER)
    slab = int(re.search(r"\bSLAB = (\d+)", baseline.KERNEL).group(1))
    tiles = (spec.N // 32) * (spec.M // 32)
    assert spec.N % 32 == spec.M % 32 == 0 and tiles == 136 and (spec.BASE // 32) * (spec.M // 32) <= H100_SMS < tiles
    assert spec.K % (reference.SPLITS * slab) == 0
    waves = tiles * reference.SPLITS / H100_SMS
    assert math.ceil(waves) / waves < 1.05 < 2 * H100_SMS / tiles  # a sliver of a tail against a second wave


def test_puzzle15_split_k_sums_meet_the_tolerance_and_a_16_bit_trip_does_not():
    """fp32 partial products over 16 splits, added afterwards (the reference's arithmetic), and cuBLAS's fp32
    matmul (alternatives/library_matmul), against the float64 product; bf16 inputs miss by far."""
    spec, library = puzzle_file(P15, "spec.py"), puzzle_file(P15, "alternatives/library_matmul.py")
    reference = puzzle_file(P15, "solution/workload.py")
    w, x = spec.make_weights(1, "cpu"), spec.make_input(2, "cpu")
    exact = x.double() @ w["w"].double()
    splits = reference.SPLITS
    partials = torch.stack([xs @ ws for xs, ws in zip(x.chunk(splits, 1), w["w"].chunk(splits, 0))])
    assert relative_l2(partials.sum(0), exact) < P15.correctness.max_rel_l2 / 10
    assert relative_l2(library.forward(library.prepare(w, "cpu"), x), exact) < P15.correctness.max_rel_l2 / 10
    bf16 = x.bfloat16().float() @ w["w"].bfloat16().float()
    assert relative_l2(bf16, exact) > 10 * P15.correctness.max_rel_l2


@pytest.mark.gpu
@pytest.mark.parametrize("workload", [*P15_KERNELS, "alternatives/library_matmul.py"])
def test_puzzle15_every_style_computes_the_projection(workload):
    spec, other = puzzle_file(P15, "spec.py"), puzzle_file(P15, workload)
    w, x = spec.make_weights(3, "cuda"), spec.make_input(4, "cuda")
    exact = (x.double() @ w["w"].double()).cpu()
    got = other.forward(other.prepare(w, "cuda"), x).cpu()
    print(workload, f"relative L2 {relative_l2(got, exact):.2e}")
    assert got.shape == (spec.M, spec.N) and relative_l2(got, exact) < P15.correctness.max_rel_l2


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


# -- puzzle17: GQA scores whose block order puts a key's 8 readers a cache apart (ptxas and the sizes on the CPU) --

P17 = get_puzzle("puzzle17", drafts=True)
P17_KERNELS = ["baseline.py", "solution/workload.py", "alternatives/group_in_registers.py"]
H100_L2_BYTES = 50 * 2**20


def _gqa_scores(k: torch.Tensor, q: torch.Tensor) -> torch.Tensor:
    """scores[b, h, s] = q[b, h] . k[b, h // GROUP, s] / sqrt(DIM), in float64 on the CPU."""
    batch, kv_heads, seq, dim = k.shape
    keys = k.double().repeat_interleave(q.shape[1] // kv_heads, dim=1)  # [b, h, s, d]: head h's key head
    return torch.einsum("bhd,bhsd->bhs", q.double(), keys) / dim**0.5


@pytest.mark.skipif(shutil.which("nvcc") is None, reason="needs nvcc (the CUDA toolkit); no GPU")
@pytest.mark.parametrize("workload", P17_KERNELS)
def test_puzzle17_every_kernel_compiles_for_the_h100_and_spills_nothing(tmp_path, workload):
    from tutor.profilers import ptxas

    source = tmp_path / "kernel.cu"
    source.write_text(puzzle_file(P17, workload).KERNEL)
    [kernel] = ptxas.compile_report(source)
    print(workload, kernel)
    assert kernel.spill_store_bytes == 0 and kernel.registers <= 96  # 96 x 256: two blocks an SM at least


def test_puzzle17_the_reference_is_the_baseline_but_for_its_block_numbers():
    """The lesson is the order alone: the reference's kernel differs from the baseline's only in the lines
    that decode the block number into (member, request, key head, chunk)."""
    import difflib

    def code(relative: str) -> list[str]:  # the kernel's lines without their comments
        lines = (line.split("//")[0].strip() for line in puzzle_file(P17, relative).KERNEL.splitlines())
        return [line for line in lines if line]

    baseline, reference = code("baseline.py"), code("solution/workload.py")
    changed = [line[1:] for line in difflib.unified_diff(baseline, reference, lineterm="", n=0)
               if line[:1] in "+-" and not line.startswith(("+++", "---"))]
    assert changed and all("id" in line and ("%" in line or "/=" in line or "= id" in line) for line in changed)
    assert len(changed) <= 6 and len(baseline) == len(reference)
    assert puzzle_file(P17, "solution/workload.py").LAUNCHER == puzzle_file(P17, "baseline.py").LAUNCHER


def test_puzzle17_its_keys_outgrow_l2_and_the_baselines_order_spaces_a_keys_readers_a_cache_apart():
    spec = puzzle_file(P17, "spec.py")
    keys = spec.BATCH * spec.KV_HEADS * spec.SEQ * spec.DIM * 2
    assert keys > 2.5 * H100_L2_BYTES and spec.HEADS == spec.KV_HEADS * spec.GROUP == 64
    chunk, resident = 256, 132 * 8  # the kernels' CHUNK; 8 blocks of 256 threads an SM
    blocks_a_member = spec.BATCH * spec.KV_HEADS * spec.SEQ // chunk
    # Between two reads of one chunk, a member's whole pass: more keys than L2, more blocks than run at once.
    assert (blocks_a_member - 1) * chunk * spec.DIM * 2 > 2 * H100_L2_BYTES and blocks_a_member > resident


def test_puzzle17_the_library_matmul_is_the_scores_within_the_tolerance(monkeypatch):
    spec, library = puzzle_file(P17, "spec.py"), puzzle_file(P17, "alternatives/library_matmul.py")
    monkeypatch.setattr(spec, "SEQ", 512)  # the same heads, fewer keys: the CPU's share
    w, q = spec.make_weights(1, "cpu"), spec.make_input(2, "cpu")
    exact = _gqa_scores(w["k"], q)
    got = library.forward(library.prepare(w, "cpu"), q)
    assert got.dtype == torch.float32 and got.shape == (spec.BATCH, spec.HEADS, 512)
    rel = relative_l2(got, exact)
    assert rel < P17.correctness.max_rel_l2 / 5, rel


@pytest.mark.gpu
@pytest.mark.parametrize("workload", [*P17_KERNELS, "alternatives/library_matmul.py"])
def test_puzzle17_every_style_gives_the_scores(workload):
    spec, other = puzzle_file(P17, "spec.py"), puzzle_file(P17, workload)
    w, q = spec.make_weights(3, "cuda"), spec.make_input(4, "cuda")
    exact = _gqa_scores(w["k"].cpu(), q.cpu())
    got = other.forward(other.prepare(w, "cuda"), q).cpu().double()
    rel = relative_l2(got, exact)
    print(workload, f"relative L2 {rel:.2e}")
    assert rel < P17.correctness.max_rel_l2


@pytest.mark.parametrize("puzzle_id, recorded", [("puzzle12", True), ("puzzle13", False), ("puzzle14", False),
                                                ("puzzle15", False), ("puzzle16", False), ("puzzle17", False)])
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
