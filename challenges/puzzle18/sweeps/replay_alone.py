"""Puzzle 18 on a GPU: what each server's replay costs on its own, in one process, with no grade around it.

    PYTHONPATH=. python challenges/puzzle18/sweeps/replay_alone.py [--traces 3] [--servers baseline reference ...]
                                                                [--device cuda] [--requests N]

A grade asks each side for every step through a pipe and stamps the tokens as the reply comes back
(tutor.harness.serving_rounds), so a step's messages are part of every server's replay time, and a server that
takes more steps pays them more often: the baseline's static batches take about ten times the reference's steps.
Here the same servers replay the same kind of trace with each step called directly: set beside a grade's
replays of the same servers (benchmarks/grade_latency.py puzzle18), the difference is what the grade's messages
cost. Printed for each server and trace: the replay's seconds, its steps, its tokens and its milliseconds a step.
The first trace of each server warms it up (allocator growth, any compile) and is printed but not comparable.
--requests N puts N in the spec's REQUESTS (the CPU test's short traces).
"""

from __future__ import annotations

import argparse
import json
import time
from pathlib import Path

from tutor.harness import serving
from tutor.harness.loading import load_module

FOLDER = Path(__file__).parents[1]
SERVERS = {"baseline": "baseline.py", "reference": "solution/workload.py",
           **{p.stem: f"alternatives/{p.name}" for p in sorted((FOLDER / "alternatives").glob("*.py"))}}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--traces", type=int, default=3, help="traces after the warm-up one")
    parser.add_argument("--servers", nargs="+", choices=sorted(SERVERS), default=["baseline", "reference"])
    parser.add_argument("--device", default="cuda")
    parser.add_argument("--requests", type=int)
    args = parser.parse_args()
    spec = load_module(FOLDER / "spec.py", "puzzle18_spec", ("make_weights", "make_trace"))
    spec.REQUESTS = args.requests or spec.REQUESTS
    weights = spec.make_weights(11, args.device)
    for name in args.servers:
        workload = load_module(FOLDER / SERVERS[name], f"puzzle18_{name}", ("prepare", "server"))
        state = workload.prepare(weights, args.device)
        for seed in (99, *range(args.traces)):
            server, steps = workload.server(state), [0]

            def step(topics, server=server):
                steps[0] += 1
                return server.step(topics)

            start = time.monotonic()
            served = serving.replay(serving.draw_trace(spec, seed), server.submit, step, limit_s=300,
                                    draw=serving.Draws(spec.TOPICS))
            seconds = time.monotonic() - start
            print(json.dumps({"server": name, "trace": "warm-up" if seed == 99 else seed, "seconds": round(seconds, 2),
                              "steps": steps[0], "tokens": sum(len(s.tokens) for s in served),
                              "ms_a_step": round(seconds / steps[0] * 1e3, 3)}), flush=True)


if __name__ == "__main__":
    main()
