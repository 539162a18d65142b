"""A multi-GPU grade's fair share (issue 37): each rank is given only its shard of the weights, keeps no more
than it, and every rank's output is checked.

Handed the whole model, rank 0 could compute the whole answer alone while the other rank idled, and a rank
whose output nobody read could skip its collectives. So the spec's `shard(weights, rank, world)` says what
each rank holds, as in real tensor or pipeline parallelism where the model does not fit one GPU; the worker
hands prepare() that and nothing else, made on the host so no freed GPU block holds the rest; a rank that
keeps more GPU memory than its shard and the spec's RANK_SLACK_BYTES (the other ranks' shards gathered in
prepare(), or the model made again from the seed) is named; and the ranks' outputs are stacked into one,
compared with the oracle's ranks' stacked the same way, so each rank must return the whole output.
"""

from __future__ import annotations

import torch

from tutor.harness.loading import call_workload


def mib(n: int) -> str:
    return f"{n / 2**20:.0f} MiB"


def on_device(x, device: str):
    """`x` (tensors in dicts and lists) moved to `device`."""
    if isinstance(x, torch.Tensor):
        return x.to(device)
    if isinstance(x, (list, tuple)):
        return type(x)(on_device(v, device) for v in x)
    if isinstance(x, dict):
        return {k: on_device(v, device) for k, v in x.items()}
    return x


def tensor_bytes(x) -> int:
    if isinstance(x, torch.Tensor):
        return x.numel() * x.element_size()
    if isinstance(x, (list, tuple)):
        return sum(tensor_bytes(v) for v in x)
    if isinstance(x, dict):
        return sum(tensor_bytes(v) for v in x.values())
    return 0


def rank_shard(spec, seed: int, rank: int, world: int, device: str):
    """Rank `rank`'s shard of the weights `seed` makes: made and split on the host, only the shard moved to the
    device (the rest is freed on the host, out of any later GPU allocation's reach)."""
    return on_device(spec.shard(spec.make_weights(seed, "cpu"), rank, world), device)


def given_weights(spec, request: dict, device: str):
    """The weights a workload process is given, in a grade or a profile alike: the spec's whole, or with ranks
    this rank's shard alone."""
    if request.get("ranks", 1) > 1:
        import torch.distributed as dist
        return call_workload("spec.shard", rank_shard, spec, request["seed"], dist.get_rank(), dist.get_world_size(),
                             device)
    return call_workload("spec.make_weights", spec.make_weights, request["seed"], device)


def over_shard(rank: int, kept: int, shard: int, slack: int) -> str:
    """The violation, if a rank keeps more GPU memory than its shard and the slack the spec allows it."""
    if kept <= shard + slack:
        return ""
    return (f"rank {rank} kept {mib(kept)} of GPU memory, more than its shard of the weights ({mib(shard)}) and "
            f"{mib(slack)} for its buffers: each rank may hold only its own shard, as when the model does not fit "
            "one GPU (gathering the other ranks' weights, or making them again, is not tensor or pipeline parallelism)")


def joined(outs: list[dict]) -> dict:
    """The ranks' outputs (tutor.harness.wire.portable's or call_checks' samples), one per rank, as one output:
    their tensors stacked rank by rank, so a comparison with the oracle's ranks checks every rank."""
    for rank, out in enumerate(outs):
        if "problem" in out:
            return {"problem": f"rank {rank}: {out['problem']}"}
    first = outs[0]
    shape = lambda o: tuple(o.get("shape", o["tensor"].shape))  # noqa: E731
    for rank, out in enumerate(outs[1:], start=1):
        if shape(out) != shape(first) or out["tensor"].dtype != first["tensor"].dtype:
            return {"problem": f"rank {rank} returned {shape(out)} {out['tensor'].dtype}, rank 0 {shape(first)} "
                               f"{first['tensor'].dtype}: every rank returns the whole output, checked like rank 0's"}
    stacked = {**first, "tensor": torch.stack([o["tensor"] for o in outs]),
               "cuda": all(o["cuda"] for o in outs),
               "strides": next((o["strides"] for o in outs if o.get("strides")), None)}
    if "shape" in first:
        stacked["shape"] = (len(outs), *first["shape"])
    return stacked
