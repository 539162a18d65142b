"""ptxas's resource report (tutor.profilers.ptxas): registers and spills per kernel, read on a GPU-less
machine, for the kernel-level puzzles' register-spill evidence."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from tutor.metrics import describe
from tutor.profilers.ptxas import compile_report, metrics, parse

FIXTURES = Path(__file__).parent / "fixtures"
needs_nvcc = pytest.mark.skipif(shutil.which("nvcc") is None, reason="nvcc is not installed")


def test_a_recorded_report_is_read_kernel_by_kernel():
    """`nvcc -arch=sm_90 -Xptxas -v` 13.0 on tests/fixtures/ptxas_spills.cu, as it printed."""
    kernels = {k.name.split("(")[0]: k for k in parse((FIXTURES / "ptxas_nvcc13.0_sm90.txt").read_text())}
    assert set(kernels) in ({"tiled", "spills"}, {"_Z5tiledPf", "_Z6spillsPKfPfi"})  # demangled where c++filt is
    spills, tiled = [kernels[k] for k in sorted(kernels, key=lambda n: "tiled" in n)]
    assert (spills.registers, spills.stack_frame_bytes, spills.spill_store_bytes, spills.spill_load_bytes,
            spills.cumulative_stack_bytes, spills.arch) == (32, 352, 428, 480, 352, "sm_90")
    assert (tiled.registers, tiled.barriers, tiled.shared_bytes, tiled.spill_store_bytes) == (12, 1, 4224, 0)


def test_the_metrics_sum_spills_and_are_documented():
    m = metrics(parse((FIXTURES / "ptxas_nvcc13.0_sm90.txt").read_text()))
    assert m.values == {"ptxas.kernels": 2, "ptxas.spill_store_bytes": 428, "ptxas.spill_load_bytes": 480,
                        "ptxas.max_registers": 32, "ptxas.max_stack_frame_bytes": 352}
    assert all(describe(name) for name in m.values)


@needs_nvcc
def test_launch_bounds_that_squeeze_registers_make_spills_and_lifting_them_removes_them(tmp_path):
    source = (FIXTURES / "ptxas_spills.cu").read_text()
    squeezed = tmp_path / "squeezed.cu"
    squeezed.write_text(source)
    roomy = tmp_path / "roomy.cu"
    roomy.write_text(source.replace("__launch_bounds__(1024, 2)", "__launch_bounds__(256)"))
    before = next(k for k in compile_report(squeezed) if "spills" in k.name)
    after = next(k for k in compile_report(roomy) if "spills" in k.name)
    print(before, after)
    assert before.registers <= 32 and before.spill_store_bytes > 0
    assert after.spill_store_bytes == 0 and after.registers > 32


@needs_nvcc
def test_a_source_that_does_not_compile_says_where(tmp_path):
    from tutor.errors import TutorError

    broken = tmp_path / "broken.cu"
    broken.write_text("__global__ void k(float* x) { x[0] = undefined_name; }\n")
    with pytest.raises(TutorError, match="broken.cu"):
        compile_report(broken)


@needs_nvcc
def test_the_ptxas_profiler_profiles_a_gpu_puzzle_here_without_a_gpu(workspace):
    """It reads the workload's KERNEL string and runs nothing: puzzle9's spills show on this GPU-less machine."""
    from tutor import actions
    from tutor.catalog import get_puzzle
    from tutor.progress import Progress

    puzzle = get_puzzle("puzzle9", drafts=True)
    baseline = actions.profile(workspace, puzzle, "baseline", profiler="ptxas")
    assert baseline.metrics.values["ptxas.spill_store_bytes"] > 0 and baseline.metrics.values["ptxas.max_registers"] == 32
    assert baseline.trace_path.name == "ptxas.json" and baseline.trace_path.is_file()
    mine_path = workspace.editable_path(puzzle, "workload.py")
    mine_path.parent.mkdir(exist_ok=True)  # a draft: new workspaces leave it out
    shutil.copy(puzzle.solution_dir / "workload.py", mine_path)
    mine = actions.profile(workspace, puzzle, "mine", profiler="ptxas")
    assert mine.metrics.values["ptxas.spill_store_bytes"] == 0
    # Recorded as the learner's own evidence, like any profile: the diagnosis may cite it.
    assert Progress(workspace.db_path).latest_profile("puzzle9", "baseline") is not None


def test_a_workload_without_its_kernel_string_says_where_the_kernel_should_be(tmp_path):
    from tutor.errors import TutorError
    from tutor.profilers.ptxas import kernel_source

    workload = tmp_path / "workload.py"
    workload.write_text("SOURCE = 'not the name the profiler reads'\n")
    with pytest.raises(TutorError, match="no KERNEL"):
        kernel_source(workload)
    workload.write_text("KERNEL = (\n")
    with pytest.raises(TutorError, match="does not parse: line"):
        kernel_source(workload)
