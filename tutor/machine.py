"""Can this machine run a puzzle? Decided without importing torch, so `list` and the TUI stay fast.

A CUDA puzzle needs an NVIDIA driver (nvidia-smi on PATH or /proc/driver/nvidia),
enough GPUs, a new enough GPU, a CUDA build of torch (read from torch/version.py,
not imported) and the packages and profilers it names. The harness still checks
for itself at run time; this is the early, readable answer.
"""

from __future__ import annotations

import csv
import importlib.metadata
import importlib.util
import platform
import re
import shutil
import subprocess
from dataclasses import dataclass
from functools import cache
from pathlib import Path

import platformdirs

from tutor.catalog import Puzzle
from tutor.profilers.registry import PROFILERS
from tutor.protocol import read_peaks

NVIDIA_PROC = Path("/proc/driver/nvidia")
# Each GPU's best measured HBM bandwidth and matmul rate (tutor.harness.peaks writes it in grades).
PEAKS_DIR = Path(platformdirs.user_cache_dir("infprof-tutor")) / "peaks"
# GPUs of each compute capability, to name what would run a puzzle that needs one at least.
GPUS_BY_CAPABILITY = {7.0: "V100", 7.5: "T4, RTX 2080", 8.0: "A100", 8.6: "RTX 3090, A10, A40", 8.9: "RTX 4090, L4, L40S",
                      9.0: "H100, H200", 10.0: "B200", 12.0: "RTX 5090"}
# The fixes readiness and doctor give; the README section they name says the whole install.
CUDA_TORCH_FIX = ("Install a CUDA build of PyTorch: `make TORCH_SPEC=torch run` in the source tree, or "
                  "`pip install torch --index-url https://download.pytorch.org/whl/cu128` (README: "
                  "'Using a GPU machine').")
GPU_EXTRAS_FIX = ("Install the GPU extras: `pip install -e '.[gpu]'` in the source tree, or "
                  "`pip install 'infprof-tutor[gpu]'` beside an installed tutor (README: 'Using a GPU machine').")


@dataclass(frozen=True)
class Gpu:
    """One GPU as nvidia-smi describes it."""

    name: str
    compute_capability: float | None
    memory_gib: float | None
    driver: str


@dataclass(frozen=True)
class Machine:
    """What this machine offers, as far as can be told without loading CUDA."""

    nvidia_driver: bool
    gpu_count: int
    compute_capabilities: tuple[float, ...] = ()  # empty when nvidia-smi could not say
    torch_installed: bool = True
    # The CUDA version torch was built for; None for a CPU build; UNKNOWN_BUILD where version.py does not say.
    torch_cuda: str | None = None
    gpus: tuple[Gpu, ...] = ()
    cpu: str = "a CPU"  # the processor's name (a CPU puzzle's card, to tutor.calibration)


@dataclass(frozen=True)
class Blocker:
    """One reason a puzzle cannot run here: a short label for tables and the full why."""

    label: str
    why: str


@dataclass(frozen=True)
class Readiness:
    blockers: tuple[Blocker, ...] = ()

    @property
    def ok(self) -> bool:
        return not self.blockers

    @property
    def label(self) -> str:
        return "ready" if self.ok else self.blockers[0].label

    @property
    def why(self) -> str:
        return " ".join(b.why for b in self.blockers)


@cache
def this_machine() -> Machine:
    """Probe once per process (nvidia-smi costs ~0.1 s, and only where a driver exists)."""
    driver = shutil.which("nvidia-smi") is not None or NVIDIA_PROC.is_dir()
    count, gpus = 0, ()
    if driver:
        count = len(list((NVIDIA_PROC / "gpus").glob("*"))) if (NVIDIA_PROC / "gpus").is_dir() else 0
        gpus = _query_gpus()
        count = max(count, len(gpus))
    caps = tuple(g.compute_capability for g in gpus if g.compute_capability is not None)
    installed, cuda = _torch_build()
    return Machine(driver, count, caps, installed, cuda, gpus, _processor())


def _processor() -> str:
    """The processor's model name, as /proc/cpuinfo or the platform gives it."""
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine() or "a CPU"


def _query_gpus() -> tuple[Gpu, ...]:
    if shutil.which("nvidia-smi") is None:
        return ()
    try:
        done = subprocess.run(["nvidia-smi", "--query-gpu=name,compute_cap,memory.total,driver_version",
                               "--format=csv,noheader,nounits"], capture_output=True, text=True, timeout=10)
    except (OSError, subprocess.SubprocessError):
        return ()
    return tuple(gpu for row in csv.reader(done.stdout.splitlines(), skipinitialspace=True)
                 if (gpu := parse_gpu_row(row)) is not None)


def parse_gpu_row(row: list[str]) -> Gpu | None:
    """One line of nvidia-smi's CSV; None for an error line. Old drivers print "[N/A]" for a field."""
    if len(row) != 4:
        return None
    name, cap, mem, driver = (field.strip() for field in row)
    mib = _number(mem)
    return Gpu(name, _number(cap), None if mib is None else mib / 1024, driver)


def _number(text: str) -> float | None:
    try:
        return float(text)
    except ValueError:
        return None


def measured_peaks(gpu_name: str) -> dict | None:
    """What grades on this GPU measured at best (tutor.harness.peaks), or None before the first."""
    return read_peaks(PEAKS_DIR, gpu_name)


# torch/version.py's line for the CUDA version it was built for: `cuda: Optional[str] = '13.0'`, or `= None`.
_CUDA_LINE = re.compile(r"^cuda(?:: [^=]+)? = (?:'([^']+)'|(None))\s*$", re.MULTILINE)
UNKNOWN_BUILD = "unknown"  # torch_cuda when version.py does not say: never taken for a CPU build


def _torch_build() -> tuple[bool, str | None]:
    """(installed, the CUDA version it was built for); None only where version.py says None (a CPU build)."""
    spec = importlib.util.find_spec("torch")
    if spec is None or not spec.origin:
        return False, None
    try:
        found = _CUDA_LINE.search(Path(spec.origin).with_name("version.py").read_text())
    except OSError:
        found = None
    if found is None:  # a layout this reader does not know: let the harness find out, never refuse on it
        return True, UNKNOWN_BUILD
    return True, found.group(1)


def _has_module(name: str) -> bool:
    try:
        return importlib.util.find_spec(name) is not None
    except (ImportError, ValueError):
        return False


@cache
def requirement(package: str) -> str | None:
    """The version the tutor asks for (its package metadata, from pyproject.toml), e.g. ">=0.17".

    None where that cannot be told: a source tree run without installing (a GPU machine's PYTHONPATH),
    or no `packaging` to read requirements with. Versions are then not checked, and nothing is refused.
    """
    try:
        wanted = importlib.metadata.requires("infprof-tutor") or []
        from packaging.requirements import Requirement
    except (importlib.metadata.PackageNotFoundError, ImportError):
        return None
    for line in wanted:
        req = Requirement(line)
        if req.name == package and req.specifier:
            return str(req.specifier)
    return None


def installed_version(package: str) -> str | None:
    try:
        return importlib.metadata.version(package)
    except importlib.metadata.PackageNotFoundError:
        return None


def too_old(package: str) -> str | None:
    """"torchao 0.16.0 (needs >=0.17)" when the installed version misses the tutor's requirement, else None."""
    version, wanted = installed_version(package), requirement(package)
    if version is None or wanted is None:
        return None
    from packaging.specifiers import SpecifierSet  # there: requirement() read it with packaging
    from packaging.version import InvalidVersion

    try:
        ok = SpecifierSet(wanted).contains(version, prereleases=True)
    except InvalidVersion:
        return None
    return None if ok else f"{package} {version} (needs {wanted})"


def gpus_that_run(capability: float) -> str:
    names = ", ".join(names for cc, names in GPUS_BY_CAPABILITY.items() if cc >= capability)
    return f"for example {names}"


def upgrade_command(package: str) -> str:
    return f"`pip install -U '{package}{requirement(package) or ''}'`"


# What no install of a package or profiler fixes: the machine itself, or its torch build.
HARDWARE_BLOCKERS = ("no torch", "no CUDA", "too few GPUs", "GPU too old", "CPU-only torch")
# What stops any run before it starts (the TUI's preflight): the machine, and a package the workload imports.
RUN_BLOCKERS = (*HARDWARE_BLOCKERS, "missing package")


def require_hardware(puzzle: Puzzle, machine: Machine | None = None) -> None:
    """Refuse a run this machine cannot do before torch is imported for it, with why and what would work."""
    from tutor.errors import EnvironmentProblem

    blockers = [b for b in readiness(puzzle, machine).blockers if b.label in HARDWARE_BLOCKERS]
    if blockers:
        raise EnvironmentProblem(f"{puzzle.id} cannot run on this machine ({blockers[0].label}).",
                                 " ".join(b.why for b in blockers))


# A kernel puzzle's CUDA source is built by torch.utils.cpp_extension on the learner's machine.
TOOLS_FIX = ("This puzzle builds its CUDA kernels on your machine (torch.utils.cpp_extension): install the "
             "CUDA toolkit whose version matches your PyTorch's CUDA, so nvcc is on PATH, and `pip install ninja`.")


def readiness(puzzle: Puzzle, machine: Machine | None = None) -> Readiness:
    """Everything that stops `puzzle` from running here, most fundamental first."""
    m = machine or this_machine()
    hw = puzzle.hardware
    blockers: list[Blocker] = []
    if not m.torch_installed:
        blockers.append(Blocker("no torch", "PyTorch is not installed in the tutor's environment: "
                                "reinstall with `make run`."))
    if hw.device == "cuda":
        needed = max(hw.gpus, 1)
        # A draft not yet run on its GPU has no recordings to study.
        study = f"`infprof-tutor study {puzzle.id}`" if puzzle.recorded_baseline.is_file() else ""
        if not m.nvidia_driver:
            blockers.append(Blocker("no CUDA", "This puzzle needs an NVIDIA GPU and no driver was found "
                                    "(no nvidia-smi, no /proc/driver/nvidia): run it on a GPU machine (README: "
                                    f"'Using a GPU machine')"
                                    + (f", or study its recorded profiles: {study}." if study else ".")))
        elif m.gpu_count < needed:
            blockers.append(Blocker("too few GPUs", f"This puzzle needs {needed} GPUs, a process each; this "
                                    f"machine has {m.gpu_count}: run it on a host with {needed}"
                                    + (f", or study rank 0's recorded profile: {study}." if study else ".")))
        elif hw.min_compute_capability and m.compute_capabilities and \
                max(m.compute_capabilities) < hw.min_compute_capability:
            blockers.append(Blocker("GPU too old", f"This puzzle needs compute capability >= "
                                    f"{hw.min_compute_capability:g} ({gpus_that_run(hw.min_compute_capability)}); "
                                    f"the best GPU here has {max(m.compute_capabilities):.1f}."
                                    + (f" Study it instead: {study}." if study else "")))
        if m.torch_installed and m.torch_cuda is None and m.nvidia_driver:  # without a GPU, no build helps
            blockers.append(Blocker("CPU-only torch", f"The installed PyTorch is a CPU-only build. {CUDA_TORCH_FIX}"))
    missing = [p for p in hw.packages if not _has_module(p)]
    if missing:
        blockers.append(Blocker("missing package", f"Not installed: {', '.join(missing)}. {GPU_EXTRAS_FIX}"))
    if absent := [tool for tool in hw.tools if shutil.which(tool) is None]:
        blockers.append(Blocker("missing tool", f"Not on PATH: {', '.join(absent)}. {TOOLS_FIX}"))
    old = [p for p in hw.packages if p not in missing and too_old(p)]
    if old:
        blockers.append(Blocker("old package", f"Too old: {', '.join(map(too_old, old))}. Upgrade: "
                                f"{' and '.join(map(upgrade_command, old))}."))
    # Only the profilers a grade reads are needed; the others are further views.
    # Without torch nothing runs at all, which the first blocker already says.
    for profiler in puzzle.grade_profilers if m.torch_installed else ():
        if problem := PROFILERS[profiler].problem(m):
            blockers.append(Blocker("missing profiler", f"{problem.message} {problem.advice}".strip()))
    return Readiness(tuple(blockers))
