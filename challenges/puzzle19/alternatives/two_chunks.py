"""The overlap kept, halved: two chunks a layer instead of four. Each layer's weights are read twice instead
of four times and two all-reduces pay their fixed cost instead of four; still twice what one pass costs.
"""

import torch
import torch.distributed as dist

CHUNKS = 2


def prepare(weights: dict, device: str):
    """This rank's halves of each layer, as the harness hands them (spec.shard): w1's columns and w2's rows."""
    return weights["layers"]


def forward(layers: list, x: torch.Tensor) -> torch.Tensor:
    for w in layers:
        partials, pending = [], []
        for chunk in x.chunk(CHUNKS):
            partial = torch.relu(chunk @ w["w1"]) @ w["w2"]
            pending.append(dist.all_reduce(partial, async_op=True))
            partials.append(partial)
        for work in pending:
            work.wait()
        x = x + torch.cat(partials)
    return x
