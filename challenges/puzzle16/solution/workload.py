"""Hand the activations over GPU to GPU: NCCL's send and receive on the GPU tensors themselves, the default
process group the harness made (NCCL on GPUs). Between two GPUs of one host NCCL copies peer to peer over
NVLink: no host memory, no TCP, no pageable staging, and the copy runs on the GPUs' own streams.
"""

import torch
import torch.distributed as dist
import torch.nn.functional as F


def prepare(weights: dict, device: str):
    """This rank's stage, as the harness hands it (spec.shard)."""
    return {"w": weights["w"]}


def forward(state: dict, x: torch.Tensor) -> torch.Tensor:
    if dist.get_rank() == 0:
        h = F.gelu(x @ state["w"])
        dist.send(h, 1)
        y = torch.empty_like(h)
        dist.recv(y, 1)
        return y
    h = torch.empty_like(x)
    dist.recv(h, 0)
    y = h @ state["w"]
    dist.send(y, 0)
    return y
