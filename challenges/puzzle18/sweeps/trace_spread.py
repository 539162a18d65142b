"""Puzzle 18 on the CPU, no model: how much a grade's throughput ratio moves from one trace to the next.

    PYTHONPATH=. python challenges/puzzle18/sweeps/trace_spread.py [--traces 40] [--requests N] [--output-max N]

A grade replays a fresh trace in each pair, so the pairs' ratios differ by the trace as well as by the
clock; with 5 pairs the interval of their median is their whole range. The first H100 grade (MEASUREMENTS.md)
saw 3.40-5.49x for the reference, too wide for any bar. This counts steps, not seconds: a step costs the same
whatever it serves (the model is small: its launches, not its arithmetic), a static batch of 16 waits up to
5 ms to fill and runs one step for its prompts and then as many as its longest output; continuous batching
fills up to 64 slots from the queue each step. Printed for each server the baseline's steps over its own
(the throughput ratio) and its p99 latency over the baseline's: median, 5th and 95th percentile over traces.
The spec's own make_trace draws the traces, with --requests and --output-max put in its place.
"""

from __future__ import annotations

import argparse
import importlib.util
import statistics
from pathlib import Path

STEP_S = 1e-3  # any constant: a ratio of step counts does not depend on it


def load_spec():
    spec = importlib.util.spec_from_file_location("puzzle18_spec", Path(__file__).parents[1] / "spec.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def p99(values: list[float]) -> float:
    return sorted(values)[int(0.99 * (len(values) - 1))]


def static(arrivals: list[float], outputs: list[int], batch: int, fill_wait_s: float) -> tuple[float, float]:
    """(makespan, p99 latency) of static batches: each runs until its longest output is done."""
    now, i, latencies = 0.0, 0, []
    while i < len(arrivals):
        now = max(now, arrivals[i])
        full_at = arrivals[min(i + batch, len(arrivals)) - 1]
        now = max(now, min(arrivals[i] + fill_wait_s, full_at))  # wait a little for the batch to fill
        j = i
        while j < len(arrivals) and j - i < batch and arrivals[j] <= now:
            j += 1
        now += STEP_S  # the prompts' step
        latencies += [now + STEP_S * outputs[k] - arrivals[k] for k in range(i, j)]
        now += STEP_S * max(outputs[i:j])
        i = j
    return now, p99(latencies)


def continuous(arrivals: list[float], outputs: list[int], slots: int) -> tuple[float, float]:
    """(makespan, p99 latency) of continuous batching: each step admits what has arrived into free slots."""
    now, i, live, latencies = 0.0, 0, [], []
    while i < len(arrivals) or live:
        if not live:
            now = max(now, arrivals[i])
        while i < len(arrivals) and arrivals[i] <= now and len(live) < slots:
            live.append([outputs[i], arrivals[i]])
            i += 1
        now += STEP_S
        for request in live:
            request[0] -= 1
        latencies += [now - arrived for left, arrived in live if left == 0]
        live = [request for request in live if request[0] > 0]
    return now, p99(latencies)


def main() -> None:
    spec = load_spec()
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--traces", type=int, default=40)
    parser.add_argument("--requests", type=int, default=spec.REQUESTS)
    parser.add_argument("--output-max", type=int, default=spec.OUTPUT_MAX)
    args = parser.parse_args()
    spec.REQUESTS, spec.OUTPUT_MAX = args.requests, args.output_max
    servers = {"continuous, 64 slots (the reference)": lambda a, o: continuous(a, o, 64),
               "continuous, 16 slots": lambda a, o: continuous(a, o, 16),
               "static batches of 64": lambda a, o: static(a, o, 64, 0.005),
               "static batches of 4, no wait": lambda a, o: static(a, o, 4, 0.0)}
    ratios: dict[str, list[tuple[float, float]]] = {name: [] for name in servers}
    for seed in range(args.traces):
        trace = spec.make_trace(seed)
        arrivals, outputs = [r["arrival_s"] for r in trace], [r["max_new"] for r in trace]
        base_makespan, base_p99 = static(arrivals, outputs, 16, 0.005)
        for name, run in servers.items():
            makespan, latency = run(arrivals, outputs)
            ratios[name].append((base_makespan / makespan, latency / base_p99))
    print(f"{args.traces} traces of {args.requests} requests, outputs up to {args.output_max} tokens")
    for name, pairs in ratios.items():
        cut = lambda xs: (statistics.median(xs), xs[len(xs) // 20], xs[-1 - len(xs) // 20])  # noqa: E731
        tput, latency = cut(sorted(t for t, _ in pairs)), cut(sorted(p for _, p in pairs))
        print(f"  {name:38s} throughput {tput[0]:.2f}x ({tput[1]:.2f}-{tput[2]:.2f})   "
              f"p99 latency {latency[0]:.2f}x ({latency[1]:.2f}-{latency[2]:.2f})")


if __name__ == "__main__":
    main()
