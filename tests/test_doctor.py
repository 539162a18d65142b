"""`infprof-tutor doctor` and the readiness it shares with the TUI: what a machine lacks, and the fix."""

from __future__ import annotations

import csv
import io
import shutil

import pytest

from tutor import machine as machine_module
from tutor.catalog import all_puzzles, get_puzzle, load_puzzle
from tutor.cli import main
from tutor.doctor import diagnose, puzzle_state
from tutor.errors import TutorError
from tutor.machine import Gpu, Machine, parse_gpu_row, readiness, this_machine
from tutor.profilers import ncu
from tutor.profilers.registry import PROFILERS

CPU_ONLY = Machine(nvidia_driver=False, gpu_count=0, torch_installed=True, torch_cuda=None)
H100 = Gpu("NVIDIA H100 80GB HBM3", 9.0, 79.6, "580.95.05")
H100_CPU_TORCH = Machine(nvidia_driver=True, gpu_count=1, compute_capabilities=(9.0,), torch_cuda=None, gpus=(H100,))
H100_READY = Machine(nvidia_driver=True, gpu_count=1, compute_capabilities=(9.0,), torch_cuda="13.0", gpus=(H100,))


def findings(report) -> dict:
    return {f.area: f for f in report.findings}


def test_a_machine_without_a_gpu_is_ready_for_what_it_can_run_and_points_gpu_puzzles_to_study_mode():
    report = diagnose(list(all_puzzles().values()), CPU_ONLY)
    states = {c.puzzle.id: puzzle_state(c) for c in report.puzzles}
    assert report.ok and states["puzzle0"].state == "ok"
    for pid in ("puzzle1", "puzzle2", "puzzle3"):
        assert states[pid].state == "note" and f"infprof-tutor study {pid}" in states[pid].fix
    # Each names the card its recordings came from: the H100's, or the one its recorded_on.txt names.
    assert states["puzzle1"].fix.endswith("as profiled on an H100 (80 GB HBM3).")
    assert states["puzzle26"].fix.endswith("as profiled on two H200s (141 GB HBM3e each) over NVLink.")
    assert "CPU-only build" in findings(report)["PyTorch"].detail and findings(report)["PyTorch"].state == "ok"
    assert findings(report)["GPU"].state == "note"


def test_a_cpu_build_of_torch_on_a_gpu_machine_is_the_problem_with_its_fix():
    report = diagnose(list(all_puzzles().values()), H100_CPU_TORCH)
    torch = findings(report)["PyTorch"]
    assert not report.ok
    assert torch.state == "problem" and "CUDA build" in torch.fix and "Using a GPU machine" in torch.fix
    assert findings(report)["GPU 0"].detail.startswith("NVIDIA H100 80GB HBM3, compute capability 9")
    p2 = next(c for c in report.puzzles if c.puzzle.id == "puzzle2")
    assert p2.could_run and puzzle_state(p2).state == "problem" and "CPU-only" in puzzle_state(p2).fix


def test_a_gpu_too_old_for_a_puzzle_is_not_counted_against_the_machine():
    a100 = Gpu("NVIDIA A100-SXM4-80GB", 8.0, 80.0, "550.54")
    m = Machine(nvidia_driver=True, gpu_count=1, compute_capabilities=(8.0,), torch_cuda="12.4", gpus=(a100,))
    report = diagnose([get_puzzle("puzzle1"), get_puzzle("puzzle2")], m)
    could = {c.puzzle.id: c.could_run for c in report.puzzles}
    assert could == {"puzzle1": False, "puzzle2": True}  # fp8 needs 8.9


def unrecorded_gpu_puzzle(tmp_path):
    """A one-GPU puzzle not yet run on its GPU, as a draft is (nothing to study): puzzle7 without its recordings."""
    folder = tmp_path / "puzzle7"
    shutil.copytree(get_puzzle("puzzle7").folder, folder, ignore=shutil.ignore_patterns("recordings"))
    return load_puzzle(folder)


def test_a_gpu_too_old_is_sent_to_study_mode_only_where_there_are_recordings(tmp_path):
    a100 = Gpu("NVIDIA A100-SXM4-80GB", 8.0, 80.0, "550.54")
    m = Machine(nvidia_driver=True, gpu_count=1, compute_capabilities=(8.0,), torch_cuda="12.4", gpus=(a100,))
    [too_old] = [b for b in readiness(get_puzzle("puzzle1"), m).blockers if b.label == "GPU too old"]
    assert "Study it instead: `infprof-tutor study puzzle1`" in too_old.why
    t4 = Gpu("Tesla T4", 7.5, 16.0, "550.54")
    old = Machine(nvidia_driver=True, gpu_count=1, compute_capabilities=(7.5,), torch_cuda="12.4", gpus=(t4,))
    [unrecorded] = [b for b in readiness(unrecorded_gpu_puzzle(tmp_path), old).blockers if b.label == "GPU too old"]
    assert "study" not in unrecorded.why.lower()


def test_a_multi_gpu_puzzle_on_one_gpu_says_how_many_it_needs_and_points_to_study_mode():
    [few] = [b for b in readiness(get_puzzle("puzzle13"), H100_READY).blockers if b.label == "too few GPUs"]
    assert "needs 2 GPUs" in few.why and "this machine has 1" in few.why
    assert "`infprof-tutor study puzzle13`" in few.why  # rank 0's profile, recorded on 2 x H200
    assert not [b for b in readiness(get_puzzle("puzzle1"), H100_READY).blockers if b.label == "too few GPUs"]


def test_an_old_package_blocks_the_puzzle_that_needs_it(monkeypatch):
    monkeypatch.setattr(machine_module, "_has_module", lambda name: True)
    monkeypatch.setattr(machine_module, "installed_version", lambda name: "0.16.0" if name == "torchao" else "9.9")
    ready = readiness(get_puzzle("puzzle1"), H100_READY)
    old = [b for b in ready.blockers if b.label == "old package"]
    assert old and "torchao 0.16.0 (needs >=0.17)" in old[0].why  # the requirement is pyproject's [gpu] extra


def test_performance_counters_kept_for_admins_stop_ncu_for_a_non_root_user(tmp_path, monkeypatch):
    params = tmp_path / "params"
    params.write_text("ResmanDebugLevel: 4294967295\nRmProfilingAdminOnly: 1\nEnableMSI: 1\n")
    monkeypatch.setattr(ncu.os, "geteuid", lambda: 1000)
    assert ncu.counters_restricted(params)
    monkeypatch.setattr(ncu.os, "geteuid", lambda: 0)
    assert not ncu.counters_restricted(params)  # root reads them
    params.write_text("RmProfilingAdminOnly: 0\n")
    monkeypatch.setattr(ncu.os, "geteuid", lambda: 1000)
    assert not ncu.counters_restricted(params)
    assert not ncu.counters_restricted(tmp_path / "absent")

    # Where they are restricted, the registry says so: puzzle3's grade reads ncu, so it is not ready.
    monkeypatch.setattr(ncu, "find_ncu", lambda: "/usr/local/cuda/bin/ncu")
    monkeypatch.setattr(ncu, "counters_restricted", lambda params=None: True)
    problem = PROFILERS["ncu"].problem(H100_READY)
    assert problem and "ERR_NVGPUCTRPERM" in problem.message and "NVreg_RestrictProfilingToAdminUsers=0" in problem.advice
    monkeypatch.setattr(machine_module, "_has_module", lambda name: True)
    assert "missing profiler" in [b.label for b in readiness(get_puzzle("puzzle3"), H100_READY).blockers]
    assert "missing profiler" not in [b.label for b in readiness(get_puzzle("puzzle1"), H100_READY).blockers]


def test_nvidia_smi_rows_are_read_field_by_field():
    out = ("NVIDIA H100 80GB HBM3, 9.0, 81559, 580.95.05\n"
           "NVIDIA GeForce RTX 4090, 8.9, 24564, 570.86.10\n"
           "Tesla K80, [N/A], [N/A], 470.82.01\n"
           "Failed to initialize NVML: Driver/library version mismatch\n")
    gpus = [g for row in csv.reader(io.StringIO(out), skipinitialspace=True) if (g := parse_gpu_row(row))]
    assert gpus[0] == Gpu("NVIDIA H100 80GB HBM3", 9.0, 81559 / 1024, "580.95.05")
    assert gpus[1].compute_capability == 8.9 and round(gpus[1].memory_gib) == 24
    assert gpus[2] == Gpu("Tesla K80", None, None, "470.82.01")
    assert len(gpus) == 3


def test_grade_profilers_must_be_among_the_puzzles_profilers(tmp_path):
    folder = tmp_path / "p"
    shutil.copytree(get_puzzle("puzzle0").folder, folder)
    meta = folder / "puzzle.toml"
    meta.write_text(meta.read_text().replace('profilers = ["torch"]', 'profilers = ["torch"]\ngrade_profilers = ["ncu"]', 1))
    with pytest.raises(TutorError, match="grade_profilers"):
        load_puzzle(folder)
    assert get_puzzle("puzzle3").grade_profilers == ("torch", "ncu")
    assert get_puzzle("puzzle1").grade_profilers == ("torch",)


def test_the_doctor_command_explains_this_machine(capsys):
    code = main(["doctor"])
    out = " ".join(capsys.readouterr().out.split())  # as one line, wherever the table wrapped
    assert "This machine" in out and "puzzle0 ready" in out and "Disk" in out
    if not this_machine().nvidia_driver:  # CI: puzzle0 runs; the GPU puzzles go to study mode, not failures
        assert code == 0 and "infprof-tutor study puzzle1" in out


def test_a_gpu_shows_the_best_rates_its_grades_measured(tmp_path, monkeypatch):
    from tutor.harness.peaks import best_known

    monkeypatch.setattr(machine_module, "PEAKS_DIR", tmp_path)
    before = findings(diagnose([get_puzzle("puzzle1")], H100_READY))["GPU 0"].detail
    assert "measured by the first grade" in before
    best_known(tmp_path, H100.name, {"hbm_read_gbps": 3012.0, "bf16_tflops": 731.0})
    after = findings(diagnose([get_puzzle("puzzle1")], H100_READY))["GPU 0"].detail
    assert "3.01 TB/s from HBM and 731 TFLOP/s in bf16 over 1 grade(s)" in after


def test_a_run_this_machine_cannot_do_is_refused_before_torch_loads_with_one_message(tmp_path):
    from tutor.errors import EnvironmentProblem
    from tutor.machine import require_hardware

    with pytest.raises(EnvironmentProblem) as no_gpu:
        require_hardware(get_puzzle("puzzle1"), CPU_ONLY)
    assert no_gpu.value.message == "puzzle1 cannot run on this machine (no CUDA)."
    assert "infprof-tutor study puzzle1" in no_gpu.value.advice and "CUDA build" not in no_gpu.value.advice
    with pytest.raises(EnvironmentProblem) as unrecorded:  # a draft not yet run on a GPU: nothing to study
        require_hardware(unrecorded_gpu_puzzle(tmp_path), CPU_ONLY)
    assert "(no CUDA)" in unrecorded.value.message and "study" not in unrecorded.value.advice
    with pytest.raises(EnvironmentProblem) as cpu_torch:
        require_hardware(get_puzzle("puzzle2"), H100_CPU_TORCH)
    assert "(CPU-only torch)" in cpu_torch.value.message and "CUDA build of PyTorch" in cpu_torch.value.advice
    require_hardware(get_puzzle("puzzle0"), CPU_ONLY)  # runs here: nothing raised
    require_hardware(get_puzzle("puzzle2"), H100_READY)  # a missing package or profiler is not hardware


@pytest.mark.parametrize("line, build", [("cuda: Optional[str] = '13.0'", "13.0"), ("cuda = '12.4'", "12.4"),
                                         ("cuda: Optional[str] = None", None), ("# no cuda line at all", "unknown")])
def test_the_torch_build_is_read_from_version_py_and_an_unknown_layout_is_never_a_cpu_build(tmp_path, monkeypatch,
                                                                                            line, build):
    import importlib.machinery

    package = tmp_path / "torch"
    package.mkdir()
    (package / "__init__.py").write_text("")
    (package / "version.py").write_text(f"from typing import Optional\n__version__ = '2.11.0'\n{line}\n")
    spec = importlib.machinery.ModuleSpec("torch", None, origin=str(package / "__init__.py"))
    monkeypatch.setattr(machine_module.importlib.util, "find_spec", lambda name: spec)
    assert machine_module._torch_build() == (True, build)
    m = Machine(nvidia_driver=True, gpu_count=1, compute_capabilities=(9.0,), torch_cuda=build, gpus=(H100,))
    cpu_only = "CPU-only torch" in [b.label for b in readiness(get_puzzle("puzzle2"), m).blockers]
    assert cpu_only == (build is None)


def test_without_packaging_or_an_installed_tutor_versions_go_unchecked_and_nothing_breaks(monkeypatch):
    """A GPU machine runs the tutor from its source tree with wheels on PYTHONPATH: maybe no `packaging`."""
    import sys

    machine_module.requirement.cache_clear()
    monkeypatch.setitem(sys.modules, "packaging", None)  # `import packaging...` now raises ImportError
    monkeypatch.setitem(sys.modules, "packaging.requirements", None)
    try:
        assert machine_module.requirement("torchao") is None and machine_module.too_old("torchao") is None
        monkeypatch.setattr(machine_module, "_has_module", lambda name: True)
        assert readiness(get_puzzle("puzzle1"), H100_READY).blockers == ()
        diagnose(list(all_puzzles().values()), H100_READY)  # the doctor still answers
    finally:
        machine_module.requirement.cache_clear()


def test_a_missing_profiler_stops_only_a_profile_taken_with_it(monkeypatch):
    """The TUI's preflight: puzzle3 without ncu still grades (its verdict names the missing evidence)."""
    from tutor.app.runs import preflight, run_kind
    from tutor.errors import EnvironmentProblem

    def no_ncu():
        raise EnvironmentProblem("Nsight Compute (ncu) is not installed on this machine.", ncu.INSTALL)

    monkeypatch.setattr(machine_module, "_has_module", lambda name: True)
    monkeypatch.setattr(ncu, "find_ncu", no_ncu)
    p3 = get_puzzle("puzzle3")
    assert "missing profiler" in [b.label for b in readiness(p3, H100_READY).blockers]  # the column says so
    assert preflight(run_kind("grade", p3), p3, H100_READY) is None
    assert preflight(run_kind("profile-baseline", p3), p3, H100_READY) is None  # torch's profile
    stopped = preflight(run_kind("profile-baseline-ncu", p3), p3, H100_READY)
    assert stopped is not None and "ncu" in stopped.message
    no_gpu = preflight(run_kind("grade", p3), p3, CPU_ONLY)
    assert no_gpu is not None and "(no CUDA)" in no_gpu.message


def test_a_kernel_puzzle_without_nvcc_or_ninja_says_which_and_how_to_get_them(monkeypatch):
    """puzzle9 and puzzle10 build their CUDA kernels on the learner's machine: a GPU without the toolkit is
    not ready, and the blocker names what is missing rather than failing in the build."""
    puzzle = get_puzzle("puzzle10", drafts=True)
    assert puzzle.hardware.tools == ("nvcc", "ninja") and "tools: nvcc, ninja" in puzzle.hardware.needs()
    real_which = shutil.which
    monkeypatch.setattr(shutil, "which", lambda name, *a, **k: None if name == "ninja" else real_which(name, *a, **k))
    blockers = [b for b in readiness(puzzle, H100_READY).blockers if b.label == "missing tool"]
    assert len(blockers) == 1 and "ninja" in blockers[0].why and "nvcc" not in blockers[0].why.split(".")[0]
    monkeypatch.setattr(shutil, "which", lambda name, *a, **k: f"/usr/bin/{name}")
    assert not [b for b in readiness(puzzle, H100_READY).blockers if b.label == "missing tool"]


@pytest.mark.parametrize("cpu_max, state", [("200000 100000\n", "note"), ("max 100000\n", "ok"), (None, "ok")])
def test_a_cpu_quota_below_the_visible_cpus_is_named_with_its_fix(tmp_path, monkeypatch, cpu_max, state):
    """In a container capped at 2 CPUs with 8 visible, torch's 8 threads are throttled together: the doctor
    says so and how many threads to ask for; no cap (or no cgroup file) is fine."""
    from tutor import doctor

    if cpu_max is not None:
        (tmp_path / "cpu.max").write_text(cpu_max)
    monkeypatch.setattr(doctor.os, "sched_getaffinity", lambda pid: set(range(8)))
    monkeypatch.delenv("OMP_NUM_THREADS", raising=False)
    finding = doctor._cpus(tmp_path)
    assert finding.state == state
    if state == "note":
        assert "quota of 2" in finding.detail and finding.fix == "export OMP_NUM_THREADS=2 before starting the tutor"
    monkeypatch.setenv("OMP_NUM_THREADS", "2")  # already set: nothing to fix
    assert doctor._cpus(tmp_path).state == "ok"
