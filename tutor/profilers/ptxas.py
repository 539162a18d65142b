"""What ptxas says of each kernel in a CUDA source: registers, spills, stack frame, shared memory.

`nvcc -Xptxas -v` compiles and runs nothing, so this answers on any machine with the CUDA toolkit,
CI's GPU-less ones included: the register-spill evidence of a kernel-level puzzle (a per-thread
array or launch bounds that force spills to local memory) can be checked where no GPU exists, and
Nsight Compute's local-memory traffic on the H100 says what the spills cost.
"""

from __future__ import annotations

import ast
import json
import re
import shutil
import subprocess
from dataclasses import asdict, dataclass
from pathlib import Path

from tutor.errors import EnvironmentProblem, TutorError
from tutor.metrics import ProfileMetrics

ARCH = "sm_90"  # the H100's; any arch nvcc knows gives its own register file's answer
INSTALL = "Install the CUDA toolkit (nvcc) and put it on PATH: https://developer.nvidia.com/cuda-downloads"

_ENTRY = re.compile(r"Compiling entry function '([^']+)' for '(\w+)'")
_PROPERTIES = re.compile(r"(\d+) bytes stack frame, (\d+) bytes spill stores, (\d+) bytes spill loads")
_USED = re.compile(r"Used (\d+) registers")
_FIELDS = {"barriers": re.compile(r"used (\d+) barriers"), "shared_bytes": re.compile(r"(\d+) bytes smem"),
           "cumulative_stack_bytes": re.compile(r"(\d+) bytes cumulative stack size")}


@dataclass
class KernelResources:
    name: str  # demangled where c++filt is installed
    arch: str
    registers: int = 0
    stack_frame_bytes: int = 0
    spill_store_bytes: int = 0
    spill_load_bytes: int = 0
    barriers: int = 0
    shared_bytes: int = 0
    cumulative_stack_bytes: int = 0


def parse(output: str) -> list[KernelResources]:
    """ptxas's -v lines, kernel by kernel (each 'Compiling entry function' opens one)."""
    kernels: list[KernelResources] = []
    for line in output.splitlines():
        if entry := _ENTRY.search(line):
            kernels.append(KernelResources(entry.group(1), entry.group(2)))
        elif not kernels:
            continue
        elif props := _PROPERTIES.search(line):
            k = kernels[-1]
            k.stack_frame_bytes, k.spill_store_bytes, k.spill_load_bytes = map(int, props.groups())
        elif used := _USED.search(line):
            k = kernels[-1]
            k.registers = int(used.group(1))
            for field, pattern in _FIELDS.items():
                if found := pattern.search(line):
                    setattr(k, field, int(found.group(1)))
    return _demangled(kernels)


def _demangled(kernels: list[KernelResources]) -> list[KernelResources]:
    filt = shutil.which("c++filt")
    if not filt or not kernels:
        return kernels
    done = subprocess.run([filt], input="\n".join(k.name for k in kernels), capture_output=True, text=True)
    names = done.stdout.splitlines()
    if done.returncode == 0 and len(names) == len(kernels):
        for k, name in zip(kernels, names):
            k.name = name
    return kernels


def find_nvcc() -> str:
    """nvcc's path; what is missing and how to get it where there is none."""
    nvcc = shutil.which("nvcc")
    if nvcc is None:
        raise EnvironmentProblem("nvcc is not installed on this machine: ptxas cannot report on the kernels.", INSTALL)
    return nvcc


def compile_report(source: Path, arch: str = ARCH, flags: tuple[str, ...] = (), timeout_s: float = 300) -> list[KernelResources]:
    """Compile `source`'s device code for `arch` (to nowhere) and read what ptxas reports of each kernel.

    -cubin stops at ptxas: the same report as -c's, without compiling, assembling and embedding the host's side
    (0.5 s a kernel against 1.5-1.9 s on a 2-core machine)."""
    command = [find_nvcc(), f"-arch={arch}", "-Xptxas", "-v", *flags, "-cubin", str(source), "-o", "/dev/null"]
    done = subprocess.run(command, capture_output=True, text=True, timeout=timeout_s)
    if done.returncode != 0:
        raise TutorError(f"nvcc could not compile {source.name}:\n{done.stderr.strip()[-2000:]}",
                         "Fix the error nvcc names (file:line), save, and run again.")
    return parse(done.stderr + done.stdout)


def metrics(kernels: list[KernelResources]) -> ProfileMetrics:
    """Per kernel as table rows; as citable values, the sums of spills and the most registers and stack."""
    values = {"ptxas.kernels": len(kernels),
              "ptxas.spill_store_bytes": sum(k.spill_store_bytes for k in kernels),
              "ptxas.spill_load_bytes": sum(k.spill_load_bytes for k in kernels),
              "ptxas.max_registers": max((k.registers for k in kernels), default=0),
              "ptxas.max_stack_frame_bytes": max((k.stack_frame_bytes for k in kernels), default=0)}
    return ProfileMetrics(values, [asdict(k) for k in kernels], profiler="ptxas", device="cuda")


def kernel_source(workload: Path, name: str = "KERNEL") -> str:
    """The CUDA source a kernel puzzle's workload keeps in a module-level string `KERNEL`, read without
    running the file (no torch, no GPU: the same answer on a machine without either)."""
    try:
        tree = ast.parse(workload.read_text(), filename=str(workload))
    except SyntaxError as e:
        raise TutorError(f"{workload.name} does not parse: line {e.lineno}: {e.msg}", "Fix it, save, and run again.")
    for node in tree.body:
        if isinstance(node, ast.Assign) and any(isinstance(t, ast.Name) and t.id == name for t in node.targets):
            if isinstance(node.value, ast.Constant) and isinstance(node.value.value, str):
                return node.value.value
    raise TutorError(f"{workload.name} has no {name} = \"\"\"...\"\"\" string of CUDA source for ptxas to compile.",
                     f"Keep the kernel in a module-level string named {name} (as the baseline does).")


def report(workload: Path, run_dir: Path) -> tuple[ProfileMetrics, Path]:
    """Compile the workload's kernel source and write what ptxas said of each kernel (the file a learner opens)."""
    source = run_dir / "kernel.cu"
    run_dir.mkdir(parents=True, exist_ok=True)
    source.write_text(kernel_source(workload))
    kernels = compile_report(source)
    written = run_dir / "ptxas.json"
    written.write_text(json.dumps([asdict(k) for k in kernels], indent=1))
    return metrics(kernels), written
