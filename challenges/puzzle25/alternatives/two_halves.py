"""Alternative: the batch in two halves, written out by hand with the blocking calls: stage 1 starts on the first
half while stage 0 runs the second. Rank 1 posts its second receive before it computes (irecv), so both ranks'
sends and receives stay in one order (rank 0: send, send, receive, receive); a blocking send placed between
rank 1's two receives would wait on a receive rank 0 has not yet posted. Half the baseline's wait remains: each
GPU still idles for half a stage."""

import torch
import torch.distributed as dist
import torch.nn.functional as F


def prepare(weights: dict, device: str):
    """This rank's stage, as the harness hands it (spec.shard): its four layers."""
    return weights["layers"]


def stage(layers: list, x: torch.Tensor) -> torch.Tensor:
    for w in layers:
        x = x + F.gelu(x @ w["w1"]) @ w["w2"]
    return x


def forward(layers: list, x: torch.Tensor) -> torch.Tensor:
    first, second = x.chunk(2)
    if dist.get_rank() == 0:
        dist.send(stage(layers, first), 1)
        dist.send(stage(layers, second), 1)
        y = torch.empty_like(x)
        for part in y.chunk(2):
            dist.recv(part, 1)
        return y
    h_first, h_second = torch.empty_like(first), torch.empty_like(second)
    dist.recv(h_first, 0)
    later = dist.irecv(h_second, 0)
    y_first = stage(layers, h_first)
    later.wait()
    y_second = stage(layers, h_second)
    dist.send(y_first, 0)
    dist.send(y_second, 0)
    return torch.cat([y_first, y_second])
