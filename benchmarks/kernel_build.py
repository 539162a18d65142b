"""What a CUDA puzzle's build costs after each edit of its kernel, step by step.

    python benchmarks/kernel_build.py [puzzle12] [--which solution/workload.py] [--edits 2] [--json out.json]

The CUDA puzzles build their kernels with torch's load_inline, once per source (named by its hash): an edit
of the kernel is a new build. Each edit here is the workload's KERNEL with a comment added, built by the
workload's own build() in a fresh extensions folder; ninja's log (.ninja_log) gives each step's wall time (the
C++ source with torch's side and pybind11's bindings, main.o; the CUDA source through nvcc, cuda.cuda.o; the
link), the two sources compiled side by side; the rest of a build is loading it. Beside it, nvcc on the kernel
alone (`-c`, for this GPU): what the kernel itself costs to compile. Needs nvcc, ninja and a CUDA build of torch.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from tutor.harness.loading import load_module
from tutor.profilers import ptxas

ROOT = Path(__file__).resolve().parent.parent


def ninja_steps(build_dir: Path) -> tuple[dict[str, float], float]:
    """Seconds per target of the build in `build_dir`, from ninja's own log (start and end in ms), and from the
    first start to the last end (the targets overlap)."""
    rows = [line.split("\t") for line in (build_dir / ".ninja_log").read_text().splitlines()
            if not line.startswith("#")]
    steps = {target: (int(end) - int(start)) / 1000 for start, end, _, target, _ in rows}
    return steps, (max(int(r[1]) for r in rows) - min(int(r[0]) for r in rows)) / 1000


def one_edit(workload, n: int) -> dict:
    """Build the kernel with comment `n` added, in a fresh extensions folder; each step's seconds."""
    folder = tempfile.mkdtemp(prefix="kernel-build-")
    os.environ["TORCH_EXTENSIONS_DIR"] = folder
    started = time.monotonic()
    workload.build(workload.KERNEL + f"\n// edit {n} {time.time_ns()}\n", workload.LAUNCHER)
    total = time.monotonic() - started
    [build_dir] = [p for p in Path(folder).rglob(".ninja_log")]
    steps, span = ninja_steps(build_dir.parent)
    return {"total_s": round(total, 2), "steps_s": steps, "ninja_s": round(span, 2)}


def kernel_alone(workload) -> float:
    """nvcc on the kernel by itself for this GPU, object file only: no torch header, no binding."""
    import torch

    major, minor = torch.cuda.get_device_capability()
    with tempfile.TemporaryDirectory() as tmp:
        source = Path(tmp) / "kernel.cu"
        source.write_text(workload.KERNEL)
        started = time.monotonic()
        subprocess.run([ptxas.find_nvcc(), "-O3", f"-arch=sm_{major}{minor}", "-c", str(source),
                        "-o", str(Path(tmp) / "k.o")], check=True)
        return round(time.monotonic() - started, 2)


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("puzzle", nargs="?", default="puzzle12")
    parser.add_argument("--which", default="solution/workload.py", help="a workload with KERNEL, LAUNCHER, build()")
    parser.add_argument("--edits", type=int, default=2)
    parser.add_argument("--json", type=Path)
    args = parser.parse_args(argv)
    workload = load_module(ROOT / "challenges" / args.puzzle / args.which, "kernel_build_workload", ())
    edits = [one_edit(workload, n) for n in range(args.edits)]
    alone = kernel_alone(workload)
    for n, edit in enumerate(edits):
        steps = ", ".join(f"{target} {s:.1f} s" for target, s in edit["steps_s"].items())
        print(f"edit {n + 1}: {edit['total_s']:.1f} s a build ({steps}; the rest, loading it, "
              f"{edit['total_s'] - edit['ninja_s']:.1f} s)")
    print(f"the kernel alone through nvcc: {alone:.1f} s")
    if args.json:
        args.json.write_text(json.dumps({"puzzle": args.puzzle, "which": args.which, "edits": edits,
                                         "kernel_alone_s": alone}, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
