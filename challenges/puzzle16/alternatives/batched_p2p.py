"""The handoffs as batched point-to-point operations (torch.distributed.batch_isend_irecv): each rank
lists its send or receive, NCCL runs the list as one group on the GPUs, and the rank waits on the
returned requests before it reads what it received.
"""

import torch
import torch.distributed as dist
import torch.nn.functional as F


def prepare(weights: dict, device: str):
    """This rank's stage, as the harness hands it (spec.shard)."""
    return {"w": weights["w"]}


def _exchange(send: torch.Tensor | None, recv: torch.Tensor | None, peer: int) -> None:
    ops = ([dist.P2POp(dist.isend, send, peer)] if send is not None else []) + \
          ([dist.P2POp(dist.irecv, recv, peer)] if recv is not None else [])
    for request in dist.batch_isend_irecv(ops):
        request.wait()


def forward(state: dict, x: torch.Tensor) -> torch.Tensor:
    if dist.get_rank() == 0:
        h = F.gelu(x @ state["w"])
        _exchange(h, None, 1)
        y = torch.empty_like(h)
        _exchange(None, y, 1)
        return y
    h = torch.empty_like(x)
    _exchange(None, h, 0)
    y = h @ state["w"]
    _exchange(y, None, 0)
    return y
