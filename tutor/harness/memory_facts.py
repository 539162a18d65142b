"""What the workloads did to GPU memory: allocator totals, CUDA-graph pools and captures, dynamo graphs.

Graph pools are told apart from the default pool by the allocator's own snapshot
(segments with a private `segment_pool_id`), so the figure holds whoever captured
the graphs: torch.compile's cudagraph trees or a hand-made torch.cuda.CUDAGraph.
"""

from __future__ import annotations

import sys

import torch

MB = 2**20


class CaptureCounter:
    """Counts CUDA-graph captures in this process, whoever starts them (installed before workloads load)."""

    def __init__(self) -> None:
        self.captures = 0
        begin = torch.cuda.CUDAGraph.capture_begin

        def counted_capture_begin(graph, *args, **kwargs):
            self.captures += 1
            return begin(graph, *args, **kwargs)

        torch.cuda.CUDAGraph.capture_begin = counted_capture_begin


def graph_pool_bytes() -> int:
    """Bytes the caching allocator holds in private pools (CUDA graphs), live or not."""
    return sum(seg["total_size"] for seg in torch.cuda.memory_snapshot()
               if tuple(seg.get("segment_pool_id", (0, 0))) != (0, 0))


def graph_pool_mb() -> float:
    return graph_pool_bytes() / MB


def graph_pools() -> int:
    """How many private pools there are: one per graph means no graph reuses another's memory."""
    pools = {tuple(seg.get("segment_pool_id", (0, 0))) for seg in torch.cuda.memory_snapshot()}
    return len(pools - {(0, 0)})


def dynamo_graphs() -> int | None:
    """Graphs torch.compile has compiled so far (each recompile adds one); None if it never ran."""
    if "torch._dynamo" not in sys.modules:
        return None
    from torch._dynamo.utils import counters
    return int(counters["stats"]["unique_graphs"])


def memory_facts(counter: CaptureCounter | None) -> dict:
    torch.cuda.synchronize()
    facts = {
        "reserved_mb": torch.cuda.memory_reserved() / MB,
        "peak_reserved_mb": torch.cuda.max_memory_reserved() / MB,
        "allocated_mb": torch.cuda.memory_allocated() / MB,
        "peak_allocated_mb": torch.cuda.max_memory_allocated() / MB,
        "graph_pool_mb": graph_pool_mb(),
        "graph_pools": graph_pools(),
        "graphs_captured": counter.captures if counter else None,
        "compiled_graphs": dynamo_graphs(),
    }
    return {k: v for k, v in facts.items() if v is not None}
