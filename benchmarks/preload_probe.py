"""Which imports a warm harness may hold before it forks, and what each saves.

    python benchmarks/preload_probe.py [module ...] [--json out.json]

For each module (or modules joined by '+', imported in that order, as a warm harness would), in a
fresh interpreter that has imported torch: the import's seconds, whether CUDA was initialised by it
(torch's lazy init, or the driver through a device query), and whether a child forked after it can
still run a CUDA kernel. A module is safe to preload only if the forked child works: CUDA is not
fork-safe once the driver is initialised.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
from pathlib import Path

DEFAULT = ("torch._dynamo", "torch._inductor.compile_fx", "triton", "torchao", "gemlite")

PROBE = r"""
import json, os, sys, time
t0 = time.perf_counter()
import torch
torch_s = time.perf_counter() - t0
t0 = time.perf_counter()
try:
    for name in sys.argv[1].split("+"):
        __import__(name)
    error = ""
except Exception as e:
    error = f"{type(e).__name__}: {e}"
import_s = time.perf_counter() - t0
initialised = torch.cuda.is_initialized()
read, write = os.pipe()
pid = os.fork()
if pid == 0:
    try:
        ok = torch.cuda.is_available() and float((torch.ones(4, device="cuda") * 2).sum()) == 8.0
    except Exception:
        ok = False
    os.write(write, b"1" if ok else b"0")
    os._exit(0)
os.waitpid(pid, 0)
child_ok = os.read(read, 1) == b"1"
print(json.dumps({"module": sys.argv[1], "torch_s": round(torch_s, 2), "import_s": round(import_s, 2),
                  "error": error, "cuda_initialised": initialised, "forked_child_runs_cuda": child_ok}))
"""


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("modules", nargs="*", default=list(DEFAULT))
    parser.add_argument("--json", type=Path)
    args = parser.parse_args()
    rows = []
    for module in args.modules:
        done = subprocess.run([sys.executable, "-c", PROBE, module], capture_output=True, text=True, timeout=300)
        row = json.loads(done.stdout.strip().splitlines()[-1]) if done.returncode == 0 and done.stdout.strip() \
            else {"module": module, "error": done.stderr[-500:]}
        rows.append(row)
        print(json.dumps(row), flush=True)
    if args.json:
        args.json.write_text(json.dumps(rows, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
