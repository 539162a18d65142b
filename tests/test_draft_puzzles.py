"""The draft puzzles (hidden until measured on the H100), as far as the CPU can check them: puzzle5's
cache written in place decodes what torch.cat's copies decode; puzzle7's batches arrive fresh in
pageable host memory and its tolerance tells fp32 from a 16-bit trip; puzzle9's baseline kernel
spills and its fixes do not, as ptxas reports on this GPU-less machine and Nsight Compute saw on the
H100; puzzle11's kernels differ from the baseline's only where its warps' shared loads land; puzzle12's
kernels compile and torch's transposed copy is exact; puzzle13's styles give rank 0 the same bits on two
gloo ranks; drafts stay out of learners' sight.

The workloads are plain torch, so the eager ones run here on the CPU for real; the graphed, compiled,
pinned and hand-written CUDA ones are the GPU's to test (the `gpu` tests here) and grade
(benchmarks/measure_draft.py).
"""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
import torch

from conftest import puzzle_file
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
        rel = (torch.linalg.vector_norm(got - expected) / torch.linalg.vector_norm(expected)).item()
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
    rel = lambda got: (torch.linalg.vector_norm(got - expected) / torch.linalg.vector_norm(expected)).item()  # noqa: E731
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
        rel = (torch.linalg.vector_norm(got - expected) / torch.linalg.vector_norm(expected)).item()
        print(workload, f"relative L2 {rel:.2e}")
        assert rel < P7.correctness.max_rel_l2


# -- puzzle9: a CUDA kernel whose launch bounds make it spill (ptxas answers on the CPU) -----------------

P9 = get_puzzle("puzzle9", drafts=True)
P9_KERNELS = {"baseline.py": True, "solution/workload.py": False, "alternatives/split_outputs.py": False}


@pytest.mark.skipif(shutil.which("nvcc") is None, reason="needs nvcc (the CUDA toolkit); no GPU")
@pytest.mark.parametrize("workload, spills", P9_KERNELS.items())
def test_puzzle9_ptxas_finds_the_baselines_spills_and_none_in_the_fixes(tmp_path, workload, spills):
    from tutor.profilers import ptxas

    source = tmp_path / "kernel.cu"
    source.write_text(puzzle_file(P9, workload).KERNEL)
    [kernel] = ptxas.compile_report(source)
    print(workload, kernel)
    assert (kernel.spill_store_bytes > 0) == spills and kernel.registers <= 255
    if workload != "solution/workload.py":  # the baseline's bounds, kept by the split: 65536 / (256 x 8)
        assert kernel.registers <= 32


def test_puzzle9_the_library_matmul_is_the_projection_within_tolerance(monkeypatch):
    spec9, library = puzzle_file(P9, "spec.py"), puzzle_file(P9, "alternatives/library_matmul.py")
    monkeypatch.setattr(spec9, "M", 4096)  # the same projection, fewer tokens: 512 MB of randn is slow on a CPU
    w, x = spec9.make_weights(1, "cpu"), spec9.make_input(2, "cpu")
    exact = (x.double().T @ w["w"].double()).float()
    got = library.forward(w, x)
    assert got.shape == (4096, spec9.N)
    assert (torch.linalg.vector_norm(got - exact) / torch.linalg.vector_norm(exact)).item() < P9.correctness.max_rel_l2 / 10


def test_puzzle9_is_a_draft_whose_folder_checks_pass():
    """Recorded on the H100 already: only its reference's grades keep it a draft (MEASUREMENTS.md)."""
    checks = {c.name: c for c in static_checks(P9)}
    assert "puzzle9" not in all_puzzles() and checks["recordings"].status == "ok"
    assert all(c.status != "failed" for c in checks.values()), [c for c in checks.values() if c.status == "failed"]


@pytest.mark.gpu
@pytest.mark.parametrize("workload", [*P9_KERNELS, "alternatives/library_matmul.py"])
def test_puzzle9_every_style_computes_the_projection(workload):
    spec9, other = puzzle_file(P9, "spec.py"), puzzle_file(P9, workload)
    w = spec9.make_weights(3, "cuda")
    state = other.prepare(w, "cuda")
    x = spec9.make_input(4, "cuda")
    exact = (x.double().T @ w["w"].double()).float()
    got = other.forward(state, x)
    rel = (torch.linalg.vector_norm(got - exact) / torch.linalg.vector_norm(exact)).item()
    print(workload, f"relative L2 {rel:.2e}")
    assert rel < P9.correctness.max_rel_l2


@pytest.mark.skipif(shutil.which("nvcc") is None, reason="needs nvcc (the CUDA toolkit); no GPU")
@pytest.mark.parametrize("workload, recorded", [("baseline.py", "baseline"), ("solution/workload.py", "reference")])
def test_puzzle9_ptxas_here_counts_the_registers_nsight_compute_saw_on_the_h100(tmp_path, workload, recorded):
    """The CPU's evidence is the hardware's: ptxas's count for sm_90 is what ran (ncu, recorded on the H100,
    benchmarks/measure_draft.py), and the register file then caps the blocks an SM holds at 8 or 5."""
    from tutor.profilers import ncu, ptxas

    source = tmp_path / "kernel.cu"
    source.write_text(puzzle_file(P9, workload).KERNEL)
    [kernel] = ptxas.compile_report(source)
    seen = ncu.extract(Path(__file__).parent / "fixtures" / f"h100_puzzle9_{recorded}_ncu.csv").values
    assert seen["ncu.registers_per_thread"] == kernel.registers
    assert seen["ncu.occupancy_limit_registers"] == 65536 // (kernel.registers * 256)
    # 2048 blocks: two waves at the baseline's 8 blocks an SM, three at the reference's 5 (MEASUREMENTS.md).
    assert seen["ncu.grid_size"] == 2048 and seen["ncu.waves_per_sm"] == pytest.approx(2048 / (132 * seen[
        "ncu.occupancy_limit_registers"]), abs=0.01)


# -- puzzle11: a tiled matmul whose warps read a column of a shared tile (ptxas and the maths on the CPU) ---

P11 = get_puzzle("puzzle11", drafts=True)
P11_KERNELS = ["baseline.py", "solution/workload.py", "alternatives/columns_across_lanes.py"]


@pytest.mark.skipif(shutil.which("nvcc") is None, reason="needs nvcc (the CUDA toolkit); no GPU")
@pytest.mark.parametrize("workload", P11_KERNELS)
def test_puzzle11_every_kernel_compiles_for_the_h100_alike_and_spills_nothing(tmp_path, workload):
    """The styles differ in where a warp's shared loads land, not in registers or spills: ptxas sees the same
    kernel, and only Nsight Compute on the GPU can tell them apart."""
    from tutor.profilers import ptxas

    source = tmp_path / "kernel.cu"
    source.write_text(puzzle_file(P11, workload).KERNEL)
    [kernel] = ptxas.compile_report(source)
    print(workload, kernel)
    assert kernel.spill_store_bytes == 0 and kernel.registers <= 32  # 1024 threads a block: 64 registers at most


def test_puzzle11_the_reference_is_the_baseline_with_its_tile_rows_padded():
    """The lesson is the padding alone: the reference's kernel is the baseline's but for the x tile's row length."""
    import difflib

    def code(relative: str) -> list[str]:  # the kernel's lines without their comments
        lines = (line.split("//")[0].strip() for line in puzzle_file(P11, relative).KERNEL.splitlines())
        return [line for line in lines if line]

    changed = [line for line in difflib.unified_diff(code("baseline.py"), code("solution/workload.py"), lineterm="", n=0)
               if line[:1] in "+-" and not line.startswith(("+++", "---"))]
    assert changed == ["-__shared__ float xs[T][T];", "+__shared__ float xs[T][T + 1];"]


def test_puzzle11_the_library_matmul_is_the_projection_within_tolerance():
    spec11, library = puzzle_file(P11, "spec.py"), puzzle_file(P11, "alternatives/library_matmul.py")
    w, x = spec11.make_weights(1, "cpu"), spec11.make_input(2, "cpu")
    exact = (x.double() @ w["w"].double()).float()
    got = library.forward(library.prepare(w, "cpu"), x)
    assert got.shape == (spec11.N, spec11.N)
    assert (torch.linalg.vector_norm(got - exact) / torch.linalg.vector_norm(exact)).item() < P11.correctness.max_rel_l2 / 10
    # A 16-bit trip fails the tolerance: the kernel's precision is not the question.
    bf16 = (x.bfloat16().float() @ w["w"].bfloat16().float())
    assert (torch.linalg.vector_norm(bf16 - exact) / torch.linalg.vector_norm(exact)).item() > 10 * P11.correctness.max_rel_l2


@pytest.mark.gpu
@pytest.mark.parametrize("workload", [*P11_KERNELS, "alternatives/library_matmul.py"])
def test_puzzle11_every_style_computes_the_projection(workload):
    spec11, other = puzzle_file(P11, "spec.py"), puzzle_file(P11, workload)
    w = spec11.make_weights(3, "cuda")
    x = spec11.make_input(4, "cuda")
    exact = (x.double() @ w["w"].double()).float()
    got = other.forward(other.prepare(w, "cuda"), x)
    rel = (torch.linalg.vector_norm(got - exact) / torch.linalg.vector_norm(exact)).item()
    print(workload, f"relative L2 {rel:.2e}")
    assert rel < P11.correctness.max_rel_l2


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
    from tutor.harness import ranks

    if backend == "nccl" and torch.cuda.device_count() < 2:
        pytest.skip("needs 2 GPUs")
    group = ranks.start(2, _puzzle13_rank, backend)
    try:
        replies = group.ask("styles")
    finally:
        group.stop()
    for reply in replies:
        baseline = reply["outputs"]["baseline.py"]
        assert all(torch.equal(out, baseline) for out in reply["outputs"].values()), \
            [s for s, out in reply["outputs"].items() if not torch.equal(out, baseline)]
    rank0 = replies[0]["outputs"]["baseline.py"].float()
    unsplit = replies[0]["unsplit"].float()
    assert (torch.linalg.vector_norm(rank0 - unsplit) / torch.linalg.vector_norm(unsplit)).item() < 2e-2


@pytest.mark.parametrize("puzzle_id", ["puzzle11", "puzzle12", "puzzle13"])
def test_a_draft_not_yet_run_on_a_gpu_passes_its_folder_checks_but_the_recordings(puzzle_id):
    checks = {c.name: c for c in static_checks(get_puzzle(puzzle_id, drafts=True))}
    assert puzzle_id not in all_puzzles() and checks["recordings"].status == "skipped"
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
