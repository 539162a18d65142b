"""What moving one output from a worker to the grade's coordinator costs: through the pipe, and spilled to a file in
shared memory (tutor/harness/wire.py), for outputs of a few sizes. CPU only: a GPU output is copied to the host
before it is sent either way.

    python benchmarks/wire_cost.py [--mb 16 128 256] [--repeats 5] [--json]

Per size it prints the median seconds from the worker's send to the coordinator's tensor in hand, and the
same with the coordinator reading every value once (torch.equal against itself), as a check does: a spilled
tensor is mapped, not copied, so its pages are read then.
"""

from __future__ import annotations

import argparse
import json
import multiprocessing as mp
import statistics
import time

import torch

from tutor.harness import wire


def worker(conn, mb: int, repeats: int, spill_bytes: int) -> None:
    wire.SPILL_BYTES = spill_bytes
    out = torch.randn(mb * 2**20 // 4)
    for _ in range(repeats):
        conn.recv_bytes()  # the coordinator's go
        wire.send(conn, {"out": {"tensor": out, "sent_at": time.perf_counter()}})


def measure(mb: int, repeats: int, spill: bool) -> dict:
    ours, theirs = mp.Pipe()
    child = mp.get_context("spawn").Process(target=worker, args=(theirs, mb, repeats, 0 if spill else 2**62))
    child.start()
    moved, checked = [], []
    for _ in range(repeats):
        ours.send_bytes(b"go")
        message = wire.recv(ours)
        moved.append(time.perf_counter() - message["out"]["sent_at"])
        tensor = message["out"]["tensor"]
        assert torch.equal(tensor, tensor)
        checked.append(time.perf_counter() - message["out"]["sent_at"])
    child.join()
    return {"mb": mb, "way": "spilled" if spill else "pipe", "moved_s": statistics.median(moved),
            "moved_and_read_s": statistics.median(checked), "repeats": repeats}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--mb", type=int, nargs="+", default=[16, 128, 256])
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    rows = [measure(mb, args.repeats, spill) for mb in args.mb for spill in (False, True)]
    if args.json:
        print(json.dumps(rows, indent=1))
        return
    for r in rows:
        print(f"{r['mb']:5d} MB {r['way']:8s} moved {r['moved_s']:.3f} s, moved and read {r['moved_and_read_s']:.3f} s "
              f"(median of {r['repeats']})")


if __name__ == "__main__":
    main()
