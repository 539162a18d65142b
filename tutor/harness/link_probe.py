"""The link between a rank group's GPUs, measured where a multi-GPU puzzle is profiled: the bus bandwidth of one
large all-reduce, the best of a few (NCCL's own convention: what each GPU's link carries, 2(n-1)/n times the
message), so a profile's collectives can be read against what these GPUs' link does at its best."""

from __future__ import annotations

MESSAGE_MIB = 64  # past NCCL's latency-bound sizes: on 2 x H200 a 16 MiB all-reduce already ran at 159 GB/s
REPEATS = 5


def all_reduce_bus_gbps(message_mib: int = MESSAGE_MIB, repeats: int = REPEATS) -> float | None:
    """In every rank of an NCCL group, together: the best bus bandwidth of an all-reduce of `message_mib` MiB;
    None where the workload took the group down (every rank alike: no rank waits on one that will not come)."""
    import torch
    import torch.distributed as dist

    if not dist.is_initialized():
        return None
    world = dist.get_world_size()
    x = torch.zeros(message_mib << 19, dtype=torch.bfloat16, device="cuda")  # 2 bytes an element
    for _ in range(2):  # NCCL sets up its channels at the first call of a size
        dist.all_reduce(x)
    torch.cuda.synchronize()
    best_ms = float("inf")
    for _ in range(repeats):
        dist.barrier()
        start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        start.record()
        dist.all_reduce(x)
        end.record()
        end.synchronize()
        best_ms = min(best_ms, start.elapsed_time(end))
    del x
    return (message_mib << 20) * 2 * (world - 1) / world / (best_ms * 1e-3) / 1e9
