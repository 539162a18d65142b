"""Alternative: no placement at all. In prepare() the ranks split every expert Megatron's way (untimed, once): each
rank keeps half of each expert's hidden units (w1's columns and w2's rows), its own four experts' halves kept and
the other halves swapped with the other rank, so each still holds four experts' bytes. A call then runs every
token through its expert on both GPUs at once, each on half of the units, and the all-reduce that ends the call
adds the halves: each GPU does exactly half of the work whatever the traffic, in matmuls half as wide."""

import torch
import torch.distributed as dist
import torch.nn.functional as F


def half(expert: dict, part: int) -> dict:
    """Half `part` of an expert's hidden units, copied: w2's rows are already contiguous, and a view of them
    would keep the whole expert alive (the rank would hold an expert more than its shard)."""
    units = expert["w1"].shape[1] // 2
    cols = slice(part * units, (part + 1) * units)
    return {"w1": expert["w1"][:, cols].clone(), "w2": expert["w2"][cols].clone()}


def prepare(weights: dict, device: str):
    rank, peer = dist.get_rank(), 1 - dist.get_rank()
    experts = {}
    for n, expert in enumerate(weights["experts"]):  # one expert at a time: my half kept, the peer's half swapped
        going = half(expert, peer)
        experts[weights["first"] + n] = half(expert, rank)
        coming = {name: torch.empty_like(t) for name, t in going.items()}
        ops = [dist.P2POp(dist.isend, going[name], peer) for name in ("w1", "w2")]
        ops += [dist.P2POp(dist.irecv, coming[name], peer) for name in ("w1", "w2")]
        for work in dist.batch_isend_irecv(ops):
            work.wait()
        experts[(weights["first"] + n + len(weights["experts"])) % len(weights["bias"])] = coming
    return {"experts": dict(sorted(experts.items())), "router": weights["router"], "bias": weights["bias"]}


def forward(w: dict, x: torch.Tensor) -> torch.Tensor:
    logits = x.float() @ w["router"] + w["bias"]
    gate, choice = logits.softmax(dim=1).max(dim=1)
    out = torch.zeros_like(x)
    for index, expert in w["experts"].items():
        rows = (choice == index).nonzero().squeeze(1)
        out[rows] = (gate[rows, None] * (F.gelu(x[rows] @ expert["w1"]) @ expert["w2"])).to(x.dtype)
    dist.all_reduce(out)
    return out
