"""The draft puzzles (hidden until measured on the H100), as far as the CPU can check them: puzzle5's
cache written in place decodes what torch.cat's copies decode; puzzle6's experts run all at once
give the loop's output, and its routes never pass the capacity its fix relies on; drafts stay out of
learners' sight until they ship.

The workloads are plain torch, so the eager ones run here on the CPU for real; the graphed and
compiled ones are the GPU's to grade (benchmarks/measure_draft.py).
"""

from __future__ import annotations

import shutil

import pytest
import torch

from tutor.catalog import all_puzzles, get_puzzle, load_puzzle
from tutor.dev_check import static_checks
from tutor.harness.loading import load_module

P5 = get_puzzle("puzzle5", drafts=True)


def load(puzzle, relative: str):
    """A file of a puzzle's folder as a module of its own, loaded as the harness loads workloads (by path)."""
    return load_module(puzzle.folder / relative, f"{puzzle.id}_{relative.replace('/', '_')}", ())


def test_a_draft_is_hidden_from_learners_until_asked_for(tmp_path, monkeypatch):
    assert "puzzle5" not in all_puzzles() and "puzzle5" in all_puzzles(drafts=True)
    monkeypatch.setenv("INFPROF_DRAFTS", "1")
    assert "puzzle5" in all_puzzles()
    monkeypatch.delenv("INFPROF_DRAFTS")
    folder = tmp_path / "p"
    shutil.copytree(get_puzzle("puzzle0").folder, folder)
    assert load_puzzle(folder).draft == ""


# -- puzzle5: the cache written in place decodes what torch.cat's copies decode ------------

def test_puzzle5_the_cache_written_in_place_decodes_what_the_copies_decode():
    spec5, baseline, in_place = (load(P5, f) for f in ("spec.py", "baseline.py", "alternatives/in_place.py"))
    weights, x = spec5.make_weights(3, "cpu"), spec5.make_input(8, "cpu")
    expected = baseline.forward(weights, x)
    got = in_place.forward(in_place.prepare(weights, "cpu"), x)
    rel = (torch.linalg.vector_norm(got - expected) / torch.linalg.vector_norm(expected)).item()
    print(f"in_place vs baseline: relative L2 {rel:.2e}")
    assert expected.shape == (spec5.BATCH, spec5.STEPS, spec5.HIDDEN) and rel < P5.correctness.max_rel_l2 / 10


def test_puzzle5_is_a_draft_whose_folder_checks_pass():
    checks = {c.name: c for c in static_checks(P5)}
    assert "puzzle5" not in all_puzzles() and checks["recordings"].status == "skipped"
    assert all(c.status != "failed" for c in checks.values()), [c for c in checks.values() if c.status == "failed"]


# -- puzzle6: every expert at once gives the loop's output -----------------------------

P6 = get_puzzle("puzzle6", drafts=True)


def test_puzzle6_routes_are_skewed_and_never_past_capacity():
    spec6 = load(P6, "spec.py")
    for seed in range(20):
        counts = torch.bincount(spec6.make_input(seed, "cpu")["expert"], minlength=spec6.EXPERTS)
        assert int(counts.sum()) == spec6.TOKENS and int(counts.max()) <= spec6.CAPACITY
        assert int((counts < 8).sum()) >= 8  # many quiet experts: the loop's GEMMs are tiny


@pytest.mark.parametrize("workload", ["alternatives/padded_bmm.py", "alternatives/compiled_padded.py"])
def test_puzzle6_every_expert_at_once_gives_the_loops_output(workload):
    spec6, baseline, other = (load(P6, f) for f in ("spec.py", "baseline.py", workload))
    weights = spec6.make_weights(2, "cpu")
    for seed in range(2):
        x = spec6.make_input(seed, "cpu")
        expected = baseline.forward(weights, x).float()
        if workload.endswith("compiled_padded.py"):  # its function uncompiled: compiling is the GPU's to test
            got = other.layer(weights["up"], weights["down"], x["x"], x["expert"]).float()
        else:
            got = other.forward(other.prepare(weights, "cpu"), x).float()
        rel = (torch.linalg.vector_norm(got - expected) / torch.linalg.vector_norm(expected)).item()
        print(workload, f"relative L2 {rel:.2e}")
        assert rel < P6.correctness.max_rel_l2 / 4


def test_puzzle6_is_a_draft_whose_folder_checks_pass():
    checks = {c.name: c for c in static_checks(P6)}
    assert "puzzle6" not in all_puzzles() and checks["recordings"].status == "skipped"
    assert all(c.status != "failed" for c in checks.values()), [c for c in checks.values() if c.status == "failed"]
