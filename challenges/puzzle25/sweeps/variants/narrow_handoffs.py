"""A sweep variant (sweeps/microbatches.py --workload ... --set HANDOFF_CTAS=N): the micro-batches with every receive
posted ahead, handed on over a process group whose NCCL kernels may use only a few CTAs (ncclConfig_t.maxCTAs, one
CTA a channel, each on an SM of its own). The reasoning it tested: a receive posted ahead of its micro-batch waits
on SMs of its own beside the stage's matmuls, which, left fewer SMs, take longer; a few channels still move a
micro-batch's 16 MB over NVLink in well under a micro-batch's stage. Measured on two H200s: at 4 CTAs rank 1's
matmuls were still 13.1 ms a call against 11.4, and 1 or 2 CTAs no faster a call (MEASUREMENTS.md)."""

import torch
import torch.distributed as dist
import torch.nn.functional as F

MICROBATCHES = 8
HANDOFF_CTAS = 4


def prepare(weights: dict, device: str):
    """This rank's stage (spec.shard), and the group its handoffs use: every rank creates it, in the same order."""
    if dist.get_backend() == "nccl":
        options = dist.ProcessGroupNCCL.Options()
        options.config.max_ctas = HANDOFF_CTAS
        group = dist.new_group(backend="nccl", pg_options=options)
    else:  # gloo on a CPU: no SMs to share
        group = dist.new_group()
    return {"layers": weights["layers"], "group": group}


def stage(layers: list, x: torch.Tensor) -> torch.Tensor:
    for w in layers:
        x = x + F.gelu(x @ w["w1"]) @ w["w2"]
    return x


def forward(state: dict, x: torch.Tensor) -> torch.Tensor:
    layers, group = state["layers"], state["group"]
    y = torch.empty_like(x)
    if dist.get_rank() == 0:
        works = [dist.isend(stage(layers, part), 1, group=group) for part in x.chunk(MICROBATCHES)]
        works += [dist.irecv(part, 1, group=group) for part in y.chunk(MICROBATCHES)]
    else:
        h = torch.empty_like(x)
        arriving = [dist.irecv(part, 0, group=group) for part in h.chunk(MICROBATCHES)]
        works = []
        for part, work, out in zip(h.chunk(MICROBATCHES), arriving, y.chunk(MICROBATCHES)):
            work.wait()
            out.copy_(stage(layers, part))
            works.append(dist.isend(out, 0, group=group))
    for work in works:
        work.wait()
    return y
