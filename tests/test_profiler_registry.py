"""One record per profiler (tutor.profilers.registry), and every face reads it instead of its own list."""

from __future__ import annotations

import ast
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from tutor.cli import build_parser
from tutor.errors import EnvironmentProblem, TutorError
from tutor.machine import Machine
from tutor.profilers.registry import PROFILERS, get_profiler, opener_for, profiler_name

TUTOR = Path(__file__).resolve().parent.parent / "tutor"


def test_every_profiler_has_what_the_faces_show_and_how_to_take_it():
    for pid, p in PROFILERS.items():
        assert p.id == pid and p.name and p.gives and callable(p.capture)
        assert "{path}" in p.opener.command_template and p.opener.look_for
        assert p.opener.command("/tmp/a b/report").endswith("'/tmp/a b/report'")


def test_the_clis_profiler_choices_are_the_registrys():
    args = build_parser().parse_args(["profile", "puzzle1", "--profiler", "nsys"])
    assert args.profiler == "nsys"
    with pytest.raises(SystemExit):
        build_parser().parse_args(["profile", "puzzle1", "--profiler", "vtune"])


def test_an_unknown_profiler_is_named_with_the_known_ones():
    with pytest.raises(TutorError) as info:
        get_profiler("vtune")
    assert "vtune" in info.value.message and all(pid in info.value.advice for pid in PROFILERS)
    assert profiler_name("vtune") == "vtune" and opener_for("vtune") is PROFILERS["torch"].opener


def test_a_missing_tool_is_a_problem_with_advice(monkeypatch):
    monkeypatch.setenv("PATH", "/nonexistent")
    monkeypatch.delenv("CUDA_HOME", raising=False)
    for pid in ("ncu", "nsys"):
        problem = PROFILERS[pid].problem()
        if problem is not None:  # a machine with the tool in a standard CUDA folder finds it anyway
            assert isinstance(problem, EnvironmentProblem) and problem.advice
    no_torch = Machine(nvidia_driver=False, gpu_count=0, torch_installed=False)
    assert "PyTorch is not installed" in PROFILERS["torch"].problem(no_torch).message


def test_reading_the_registry_loads_no_parser_and_no_framework():
    code = ("import sys, tutor.profilers.registry; "
            "print(sorted(m for m in sys.modules if m.split('.')[0] in ('pandas', 'torch', 'sqlite3', 'textual')))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "[]"


@pytest.mark.parametrize("path", sorted(TUTOR.rglob("*.py")), ids=lambda p: p.relative_to(TUTOR).as_posix())
def test_no_module_keeps_its_own_list_of_profilers(path):
    # Adding a profiler touches the registry, its capture and its parser: no other module lists the
    # tools (two ids or more) or spells how to open their files.
    if path.relative_to(TUTOR).parts[0] == "profilers":
        return
    strings = {n.value for n in ast.walk(ast.parse(path.read_text())) if isinstance(n, ast.Constant)
               and isinstance(n.value, str)}
    ids = sorted(strings & (set(PROFILERS) - {"torch"}))  # "torch" names a module too
    viewers = [v for v in ("ncu-ui", "nsys-ui", "ui.perfetto.dev", "open_trace_in_ui") if any(v in t for t in strings)]
    assert len(ids) < 2 and not viewers, f"{path.name} lists {ids} {viewers}: read tutor.profilers.registry"


def test_every_headline_metric_has_a_label_and_a_meaning():
    from tutor.metrics import describe
    from tutor.records import KEY_FIGURES

    labels = dict(KEY_FIGURES)
    for p in PROFILERS.values():
        assert all(name in labels and describe(name) for name in p.headline), p.id


def test_each_metric_is_taken_from_the_profiler_that_gives_it():
    """tutor.reference profiles the baseline with each profiler its answer cites: by the metric's own names,
    never by a word that happens to be a profiler's id (puzzle2's memory.* is the torch profiler's)."""
    from tutor.catalog import get_puzzle
    from tutor.profilers.registry import profiler_giving
    from tutor.reference import other_profilers_cited

    assert [profiler_giving(m) for m in ("memory.graph_pool_mb", "allocator.graph_pool_mb", "ncu.waves_per_sm",
                                         "ptxas.max_registers", "cpu.time_per_iter_us")] == \
        ["torch", "memory", "ncu", "ptxas", "torch"]
    assert other_profilers_cited(get_puzzle("puzzle2")) == []
    assert other_profilers_cited(get_puzzle("puzzle9", drafts=True)) == ["ncu"]  # ncu's counts, as its recording has


@pytest.mark.skipif(shutil.which("nvcc") is None, reason="needs nvcc")
def test_doctor_names_nvcc_and_its_release_for_ptxas():
    from tutor.doctor import tool_version

    tool = PROFILERS["ptxas"].find_tool(None)
    assert tool == shutil.which("nvcc") and tool_version(tool).startswith("version 1")
