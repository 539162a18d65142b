"""Puzzle 18 on a GPU: how busy the GPU is while a server replays a trace, as NVML samples it, for the
reference and for two servers that never run the model (what a floor for a serving grade must tell apart).

    PYTHONPATH=. python challenges/puzzle18/sweeps/gpu_busy.py [--traces 3] [--json FILE]

Each next token of this model is the successor of the last state in the prompt's topic, and that map can
be read off the weights once: the MLP's output for each of the 511 states, against the output rows. A
server that does so and then hands out a token a request a step gives every right token with the model
never run (cheats/): `gpu_table` gathers each step's next states from the map on the GPU and copies them
back (a kernel and a copy a step), `host_table` looks them up in a Python list (the GPU idle). A grade's
correctness and the rule of a token a step pass both. The coordinator could still tell them from a server
that runs the model by how busy the GPU was during the replay: this measures that.

NVML keeps the GPU's utilization as samples (nvmlDeviceGetSamples, GPU_UTILIZATION_SAMPLES): each the percent
of its period during which a kernel ran. Printed for each server and trace: the replay's seconds and
tokens, the samples' count and median period, the GPU busy milliseconds they add up to (percent x period),
and those per thousand tokens; then the model's least work for the trace (its FLOPs at the GPU's bf16 peak)
for scale. First, what a grade would need to read it without waiting: how far back NVML's buffer reaches,
and how its timestamps sit against the wall clock (a replay's own window read through time.time() is
printed beside the samples' own). Nothing here grades: it is the measurement a floor would be set from.
"""

from __future__ import annotations

import argparse
import json
import statistics
import time
from pathlib import Path

import torch

from tutor.harness import serving
from tutor.harness.gpu_busy import Nvml, busy_ms, cuda_device_uuid
from tutor.harness.loading import load_module

FOLDER = Path(__file__).parents[1]
BF16_DENSE_TFLOPS = 989.0  # an H100 SXM's datasheet peak: the least work's scale, not a measurement


def measure(nvml: Nvml, make_server, trace: list[serving.Request]) -> tuple[dict, list[serving.Served]]:
    server = make_server()
    torch.cuda.synchronize()
    time.sleep(0.5)  # a quiet GPU first, and NVML's clock past this moment
    since = max((t for t, _ in nvml.samples_since(0)), default=0)
    start, start_us = time.monotonic(), time.time() * 1e6
    served = serving.replay(trace, server.submit, server.step, limit_s=300, draw=serving.Draws(8))  # the spec's topics
    seconds, end_us = time.monotonic() - start, time.time() * 1e6
    time.sleep(0.5)  # the last period's sample
    samples = nvml.samples_since(since)
    periods = [b[0] - a[0] for a, b in zip(samples, samples[1:])]
    busy = busy_ms(samples, since, samples[-1][0] if samples else since)  # the replay and the quiet around it
    tokens = sum(len(s.tokens) for s in served)
    return served, {"seconds": round(seconds, 3), "tokens": tokens, "samples": len(samples),
                    "period_ms": round(statistics.median(periods) / 1e3, 2) if periods else None,
                    "busy_ms": round(busy, 2), "busy_ms_per_1k_tokens": round(busy / tokens * 1e3, 3),
                    "max_percent": max((pct for _, pct in samples), default=0),
                    # If NVML stamps its samples in the wall clock's microseconds, the replay's own window
                    # reads as much as the samples around it: what a grade could use without waiting.
                    "busy_ms_wall_window": round(busy_ms(samples, start_us, end_us), 2)}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--traces", type=int, default=3)
    parser.add_argument("--json", type=Path)
    args = parser.parse_args()
    spec = load_module(FOLDER / "spec.py", "puzzle18_spec", ("make_weights", "make_trace"))
    weights, servers = spec.make_weights(11, "cuda"), {}
    for name, path in (("reference", "solution/workload.py"), ("gpu_table", "cheats/gpu_table.py"),
                       ("host_table", "cheats/host_table.py")):
        workload = load_module(FOLDER / path, f"puzzle18_{name}", ("prepare", "server"))
        state = workload.prepare(weights, "cuda")
        servers[name] = lambda workload=workload, state=state: workload.server(state)
    nvml, rows = Nvml(uuid=cuda_device_uuid()), []
    held = nvml.samples_since(0)  # how far back NVML's buffer reaches, and its clock against the wall's
    print(json.dumps({"buffered_samples": len(held), "buffer_span_s": round((held[-1][0] - held[0][0]) / 1e6, 2)
                      if held else 0, "newest_sample_minus_wall_s": round(held[-1][0] / 1e6 - time.time(), 3)
                      if held else None}), flush=True)
    warm = servers["reference"]()  # the reference's first replay compiles and grows its allocator
    serving.replay(serving.draw_trace(spec, 99), warm.submit, warm.step, limit_s=300)
    for seed in range(args.traces):
        trace = serving.draw_trace(spec, seed)
        least_ms = serving.least_flops(spec, trace) / BF16_DENSE_TFLOPS / 1e9
        tokens = {}
        for name, make in servers.items():
            served, figures = measure(nvml, make, trace)
            tokens[name] = [s.tokens for s in served]
            rows.append({"server": name, "trace": seed, "least_ms_at_peak": round(least_ms, 3), **figures,
                         "tokens_right": tokens[name] == tokens["reference"]})
            print(json.dumps(rows[-1]), flush=True)
    if args.json:
        args.json.write_text(json.dumps(rows, indent=1))


if __name__ == "__main__":
    main()
