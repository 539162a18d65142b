"""How precisely can a held call tell that GPU work escaped its timed stream?

    python benchmarks/escape_check.py [--calls 200]

Times three workloads with the GPU held (tutor.harness.hold) and, for each call, four
estimates of the device time left after the timed stream's end event:
  - two_syncs: end.synchronize(), then a device-wide sync: how long the second took;
  - poll:      end.query() polled until true, then a device-wide sync: how long that took;
  - raw:       as two_syncs, with torch._C's synchronize (no Python wrapper);
  - window:    host time from before the hold to the device idle, less the GPU's own time
               from before the hold to the end event (one sync; the hold cancels out).
An honest workload should read ~0 (and the spread is the noise a threshold must clear);
the side stream (~1.4 ms of matmuls never joined back) should read its full length.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time

import torch

from tutor.harness.hold import GpuHold

_ns = time.perf_counter_ns


def workloads():
    ws = [torch.randn(4096, 4096, device="cuda", dtype=torch.bfloat16) / 64 for _ in range(8)]
    static_x = torch.randn(1, 4096, device="cuda", dtype=torch.bfloat16)

    def layers(h):
        for w in ws:
            h = torch.nn.functional.linear(h, w)
        return h

    side = torch.cuda.Stream()
    side.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(side):
        layers(static_x)
    torch.cuda.current_stream().wait_stream(side)
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph):
        static_y = layers(static_x)
    a = torch.randn(4096, 4096, device="cuda", dtype=torch.bfloat16)
    cheat_stream = torch.cuda.Stream()

    def graphed():
        static_x.copy_(torch.randn(1, 4096, device="cuda", dtype=torch.bfloat16))
        graph.replay()
        return static_y.clone()

    def eager():
        return layers(static_x)

    def side_stream():
        with torch.cuda.stream(cheat_stream):
            for _ in range(8):
                a @ a

    return {"graph": graphed, "eager": eager, "side_stream": side_stream}


def held_call(hold: GpuHold, fn, hold_ms: float, how: str) -> float:
    torch.cuda.synchronize()
    before, start, end = (torch.cuda.Event(enable_timing=True) for _ in range(3))
    t_before = _ns()
    before.record()
    hold.hold_ms(hold_ms)
    start.record()
    fn()
    end.record()
    if how == "window":
        torch.cuda.synchronize()
        return (_ns() - t_before) / 1e6 - before.elapsed_time(end)
    if how == "poll":
        while not end.query():
            pass
    else:
        end.synchronize()
    t_end = _ns()
    if how == "raw":
        torch._C._cuda_synchronize()
    else:
        torch.cuda.synchronize()
    return (_ns() - t_end) / 1e6


def enqueue_ms(hold: GpuHold, fn, hold_ms: float) -> float:
    """The host's time to enqueue `fn` while the GPU is held."""
    torch.cuda.synchronize()
    hold.hold_ms(hold_ms)
    t0 = _ns()
    fn()
    took = (_ns() - t0) / 1e6
    torch.cuda.synchronize()
    return took


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--calls", type=int, default=200)
    args = parser.parse_args()
    hold = GpuHold()
    hows = ("two_syncs", "poll", "raw", "window")
    for name, fn in workloads().items():
        for _ in range(5):
            fn()
        seen = [statistics.median(enqueue_ms(hold, fn, ms) * 1e3 for _ in range(15)) for ms in (20.0, 2.0, 20.0)]
        print(f"{name:12} host enqueue µs, median of 15 under a 20 / 2 / 20 ms hold: "
              + " / ".join(f"{v:.1f}" for v in seen), flush=True)
        for hold_ms in (0.05, 1.0, 5.0):
            rows = {how: [] for how in hows}
            for _ in range(args.calls // 4):
                for how in hows:
                    rows[how].append(held_call(hold, fn, hold_ms, how) * 1e3)
            empty = {how: statistics.median(held_call(hold, lambda: None, hold_ms, how) * 1e3 for _ in range(21))
                     for how in hows}
            cells = "  ".join(f"{how} {statistics.median(v):7.1f} [p90 {sorted(v)[int(0.9 * len(v))]:7.1f}] "
                              f"(empty {empty[how]:5.1f})" for how, v in rows.items())
            print(f"{name:12} hold {hold_ms:4.2f} ms  µs after end: {cells}", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
