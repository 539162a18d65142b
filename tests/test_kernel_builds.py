"""The CUDA puzzles' builds: each workload that keeps torch's side in its C++ source (BINDING) gives nvcc a CUDA
source, its kernel and launcher, that compiles with no torch header. With torch's headers in it, nvcc spent nearly
a minute of each build after an edit on them (benchmarks/kernel_build.py; challenges/puzzle12/MEASUREMENTS.md)."""

from __future__ import annotations

import hashlib
import shutil
from pathlib import Path

import pytest

from conftest import exclusively, shared_folder
from tutor.harness.loading import load_module
from tutor.profilers import ptxas

CHALLENGES = Path(__file__).resolve().parent.parent / "challenges"
SPLIT = sorted(f for f in CHALLENGES.rglob("*.py") if "\nBINDING = " in f.read_text())


def test_every_file_that_builds_a_kernel_keeps_torch_out_of_its_cuda_source():
    """Every CUDA puzzle's every such file (its baseline, the learner's start, too)."""
    builders = {f for f in CHALLENGES.rglob("*.py") if "load_inline(" in f.read_text()}
    assert len({f.relative_to(CHALLENGES).parts[0] for f in builders}) >= 9 and builders == set(SPLIT)


@pytest.fixture(scope="session")
def builds(tmp_path_factory, worker_id) -> Path:
    """Where the session's test processes compile each CUDA source once: a cheat or an alternative that keeps its
    baseline's kernel gives nvcc the same bytes (38 files, 27 sources)."""
    folder = shared_folder(tmp_path_factory, worker_id) / "kernel-builds"
    folder.mkdir(exist_ok=True)
    return folder


@pytest.mark.skipif(shutil.which("nvcc") is None, reason="needs nvcc (the CUDA toolkit); no GPU")
@pytest.mark.parametrize("path", SPLIT, ids=lambda f: f.relative_to(CHALLENGES).as_posix())
def test_its_cuda_source_compiles_without_torchs_headers(builds, path):
    module = load_module(path, "_".join(path.relative_to(CHALLENGES).with_suffix("").parts), ())
    assert "torch" not in module.KERNEL + module.LAUNCHER and "#include <torch/extension.h>" in module.BINDING
    text = "#include <cuda_runtime.h>\n" + module.KERNEL + module.LAUNCHER
    # nvcc's device pass (-cubin, through ptxas.compile_report) reads the whole source, the launcher's host code too:
    # an undefined name or a torch type anywhere fails it as `-c` would, at a third of -c's CPU. Only a host-only
    # branch would escape it.
    assert "__CUDA_ARCH__" not in text
    built = builds / hashlib.sha256(text.encode()).hexdigest()[:20]
    with exclusively(built.with_suffix(".lock")):
        if not (built / "compiled").is_file():
            built.mkdir(exist_ok=True)
            (built / "cuda.cu").write_text(text)
            ptxas.compile_report(built / "cuda.cu")
            (built / "compiled").touch()  # there only once a compile has succeeded
    assert (built / "cuda.cu").read_text() == text
