"""The draft puzzles (hidden until measured on the H100), as far as the CPU can check them: puzzle7's batches
arrive fresh in pageable host memory and its tolerance tells fp32 from a 16-bit trip; drafts stay out of
learners' sight; the device script names only puzzles and files that exist.

The workloads are plain torch, so the eager ones run here on the CPU for real; the graphed, compiled and
pinned ones are the GPU's to test (the `gpu` tests here) and grade (benchmarks/measure_draft.py).
"""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
import torch

from conftest import puzzle_file, relative_l2
from tutor.catalog import all_puzzles, get_puzzle, load_puzzle
from tutor.dev_check import static_checks


def test_a_draft_is_hidden_from_learners_until_asked_for(tmp_path, monkeypatch):
    assert "puzzle7" not in all_puzzles() and "puzzle7" in all_puzzles(drafts=True)
    monkeypatch.setenv("INFPROF_DRAFTS", "1")
    assert "puzzle7" in all_puzzles()
    monkeypatch.delenv("INFPROF_DRAFTS")
    folder = tmp_path / "p"
    shutil.copytree(get_puzzle("puzzle0").folder, folder)
    assert load_puzzle(folder).draft == ""


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
