"""`pip install .` gives a working tutor from any folder: build the wheel, install it into a fresh
virtual environment, and use it from outside the source tree (list, doctor, study, a grade of puzzle0).

The fresh environment gets its dependencies (torch, textual, ...) from the test's own environment
through a .pth line, so nothing is downloaded; the tutor itself, its puzzles, graders, recordings
and styles can come only from the wheel.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
import sysconfig
import zipfile
from pathlib import Path

import pytest

from conftest import exclusively, shared_folder, shrink_puzzle0

pytestmark = pytest.mark.first  # its install is the suite's longest piece: begun first, it ends beside the rest
ROOT = Path(__file__).resolve().parent.parent
SHIPPED = ("tutor", "challenges", "graders")


def tracked_files() -> list[str]:
    """The files under the shipped folders that git tracks (all of them where git is missing)."""
    try:
        out = subprocess.run(["git", "ls-files", *SHIPPED], cwd=ROOT, capture_output=True, text=True, check=True).stdout
        return out.split()
    except (OSError, subprocess.CalledProcessError):
        return [p.relative_to(ROOT).as_posix() for d in SHIPPED for p in (ROOT / d).rglob("*")
                if p.is_file() and "__pycache__" not in p.parts]


@pytest.fixture(scope="session")
def installed(tmp_path_factory, worker_id) -> Path:
    """A fresh venv with the wheel installed: its bin/ folder. Built once for the session's test processes (pytest-xdist
    may hand this file's two tests to two of them: 7 core-seconds each time)."""
    shared = shared_folder(tmp_path_factory, worker_id)
    tmp = shared / "wheel"
    with exclusively(shared / "wheel.lock"):
        if not (tmp / "installed").is_file():
            shutil.rmtree(tmp, ignore_errors=True)  # a build cut short by a test process that failed
            build_and_install(tmp)
            (tmp / "installed").touch()
    return tmp / "venv" / "bin"


def build_and_install(tmp: Path) -> None:
    """The wheel built from a copy of the sources in tmp/dist, installed into a fresh venv in tmp/venv."""
    src = tmp / "src"  # setuptools writes build/ and egg-info beside the sources: not in the repo
    for name in SHIPPED:
        shutil.copytree(ROOT / name, src / name, ignore=shutil.ignore_patterns("__pycache__"))
    for name in ("pyproject.toml", "README.md"):
        shutil.copy(ROOT / name, src / name)
    subprocess.run([sys.executable, "-m", "pip", "wheel", "-q", "--no-deps", "--no-build-isolation", "--no-index",
                    "-w", str(tmp / "dist"), str(src)], check=True, timeout=300)
    wheel = next((tmp / "dist").glob("infprof_tutor-*.whl"))
    venv = tmp / "venv"
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(venv)], check=True, timeout=120)
    python = venv / "bin" / "python"
    subprocess.run([sys.executable, "-m", "pip", "--python", str(python), "install", "-q", "--no-deps", "--no-index",
                    str(wheel)], check=True, timeout=300)
    site = subprocess.run([str(python), "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
                          capture_output=True, text=True, check=True).stdout.strip()
    # Dependencies from ours, after the venv's own site-packages (and no .pth of ours runs there,
    # so our editable install of the tutor stays out).
    Path(site, "dependencies.pth").write_text(sysconfig.get_paths()["purelib"] + "\n")


def test_the_wheel_holds_every_file_of_the_tutor_its_puzzles_and_graders(installed):
    wheel = next(installed.parent.parent.glob("dist/infprof_tutor-*.whl"))
    names = set(zipfile.ZipFile(wheel).namelist())
    missing = [f for f in tracked_files() if f not in names]
    assert not missing, f"not in the wheel: {missing}"


def run_env(bin_dir: Path) -> dict:
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "VIRTUAL_ENV")}
    env["PATH"] = f"{bin_dir}:{env.get('PATH', '')}"
    env["COLUMNS"] = "200"  # one line per row, whatever the table
    return env


def run(bin_dir: Path, cwd: Path, *args: str, timeout: float = 300) -> subprocess.CompletedProcess:
    return subprocess.run([str(bin_dir / "infprof-tutor"), *args], cwd=cwd, env=run_env(bin_dir),
                          capture_output=True, text=True, timeout=timeout)


def test_the_installed_tutor_works_from_outside_the_source_tree(installed, tmp_path):
    where = subprocess.run([str(installed / "python"), "-c", "import tutor, challenges; print(tutor.__file__, "
                            "challenges.__path__[0])"], cwd=tmp_path, capture_output=True, text=True, check=True)
    assert str(ROOT) not in where.stdout and str(installed.parent) in where.stdout
    # Its grade below on puzzle0 made small, as the app's and the CLI's tests grade it: the flows, not the sizes.
    shrink_puzzle0(Path(where.stdout.split()[1]) / "puzzle0")

    assert run(installed, tmp_path, "init", "ws").returncode == 0
    ws = tmp_path / "ws"
    listed = run(installed, ws, "list")
    assert listed.returncode == 0 and all(f"puzzle{i}" in listed.stdout for i in range(4)), listed.stderr

    doctor = run(installed, ws, "doctor")
    assert "puzzle0" in doctor.stdout and "ready" in doctor.stdout, doctor.stdout + doctor.stderr

    study = run(installed, ws, "study", "puzzle1")  # the H100 recordings ship in the wheel
    assert study.returncode == 0 and "gpu.time_per_iter_us" in study.stdout, study.stdout + study.stderr

    # The reference solution, its answer citing this profile, as the installed tutor puts it in place.
    ready = subprocess.run([str(installed / "python"), "-c", "from tutor.catalog import get_puzzle; "
                            "from tutor.reference import ready_to_grade; from tutor.workspace import Workspace; "
                            "ready_to_grade(Workspace(__import__('pathlib').Path('.').resolve()), get_puzzle('puzzle0'))"],
                           cwd=ws, env=run_env(installed), capture_output=True, text=True, timeout=300)
    assert ready.returncode == 0, ready.stderr[-2000:]
    graded = run(installed, ws, "grade", "puzzle0")
    # The grade ran whole: the reference's output right and its evidence matched; whether its tier clears on two
    # busy cores (ten rounds of sub-millisecond calls, one preempted call widens the interval past a bar) is the
    # CPU's load, not the install's, so the verdict is read, not the tier.
    said = graded.stdout + graded.stderr
    assert "PASS correctness:" in said and "matches your profile" in said, said[-2000:]
    assert "Solved" in said or "FAIL performance" in said, said[-2000:]
    # README's example of a grade reads as a grade does, its figures aside: its stages, and the verdict's lines
    # that do not hang on the tier.
    for line in readme_grade_lines():
        assert re.search(any_figures(line), said), line


def readme_grade_lines() -> list[str]:
    """README's example grade of puzzle0: its stage lines, and its verdict's lines of correctness and diagnosis."""
    readme = (ROOT / "README.md").read_text()
    block = readme[readme.index("```\n▸ importing: torch"):]
    block = block[:block.index("╰")]
    lines = [line.strip("│ ") for line in block.splitlines()[1:]]
    return [line for line in lines if line.startswith(("▸", "PASS correctness", "PASS diagnosis", "timed calls"))]


def any_figures(line: str) -> str:
    """`line` as a pattern in which each figure may be any other."""
    return r"[\d.e+-]+".join(map(re.escape, re.split(r"\d+(?:\.\d+)?(?:e[+-]\d+)?", line)))
