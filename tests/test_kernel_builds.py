"""The CUDA puzzles' builds: each workload that keeps torch's side in its C++ source (BINDING) gives nvcc a CUDA
source, its kernel and launcher, that compiles with no torch header. With torch's headers in it, nvcc spent nearly
a minute of each build after an edit on them (benchmarks/kernel_build.py; challenges/puzzle12/MEASUREMENTS.md)."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest

from tutor.harness.loading import load_module
from tutor.profilers import ptxas

CHALLENGES = Path(__file__).resolve().parent.parent / "challenges"
SPLIT = sorted(f for f in CHALLENGES.rglob("*.py") if "\nBINDING = " in f.read_text())


def test_every_file_that_builds_a_kernel_keeps_torch_out_of_its_cuda_source():
    """Every CUDA puzzle's every such file (its baseline, the learner's start, too)."""
    builders = {f for f in CHALLENGES.rglob("*.py") if "load_inline(" in f.read_text()}
    assert len({f.relative_to(CHALLENGES).parts[0] for f in builders}) >= 9 and builders == set(SPLIT)


@pytest.mark.skipif(shutil.which("nvcc") is None, reason="needs nvcc (the CUDA toolkit); no GPU")
@pytest.mark.parametrize("path", SPLIT, ids=lambda f: f.relative_to(CHALLENGES).as_posix())
def test_its_cuda_source_compiles_without_torchs_headers(tmp_path, path):
    module = load_module(path, "_".join(path.relative_to(CHALLENGES).with_suffix("").parts), ())
    assert "torch" not in module.KERNEL + module.LAUNCHER and "#include <torch/extension.h>" in module.BINDING
    source = tmp_path / "cuda.cu"
    source.write_text("#include <cuda_runtime.h>\n" + module.KERNEL + module.LAUNCHER)
    subprocess.run([ptxas.find_nvcc(), f"-arch={ptxas.ARCH}", "-c", str(source), "-o", str(tmp_path / "cuda.o")],
                   check=True, capture_output=True, timeout=300)
