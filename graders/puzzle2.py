"""puzzle2: serving every batch size must not cost a graph pool per size.

The grade's memory run (tutor.actions, `memory_run = true`) serves the learner's
workload alone in a fresh process, every batch size 1..64 twice, and reports
what the allocator holds in CUDA graphs' private pools. Measured on the H100
(docs/notes/puzzle2-measurements.md): the baseline 176 MB, hand-made graphs per
size in their own pools 160 MB, per size in one pool 38 MB, per bucket in one
pool 34 MB. The limit sits between the fixes and the leaks.
"""

from __future__ import annotations

from tutor.catalog import Puzzle
from tutor.grading.verdict import Criterion

MAX_GRAPH_POOL_MB = 64.0


def criteria(puzzle: Puzzle, result: dict, answer_path=None, profiles=None) -> list[Criterion]:
    memory = result.get("memory_run")
    if not memory or "graph_pool_mb" not in memory:
        return [Criterion("graph memory", False, "The memory run reported no GPU memory figures.",
                          ["Grade on a CUDA GPU with the current tutor version."])]
    pool = memory["graph_pool_mb"]
    details = [f"CUDA-graph pools after serving every batch size twice: {pool:.0f} MB "
               f"(limit {MAX_GRAPH_POOL_MB:.0f} MB)",
               f"allocator reserved {memory.get('reserved_mb', 0):.0f} MB in all, "
               f"tensors held {memory.get('allocated_mb', 0):.0f} MB"]
    if "graphs_captured" in memory:
        details.append(f"CUDA graphs captured: {memory['graphs_captured']}")
    if memory.get("compiled_graphs"):
        details.append(f"torch.compile graphs compiled: {memory['compiled_graphs']}")
    if pool <= MAX_GRAPH_POOL_MB:
        summary = f"Every batch size served with {pool:.0f} MB of graph memory."
    else:
        summary = (f"Your graphs hold {pool:.0f} MB: more than {MAX_GRAPH_POOL_MB:.0f} MB. "
                   "Fewer graphs, one shared pool, and no copies of the weights.")
    return [Criterion("graph memory", pool <= MAX_GRAPH_POOL_MB, summary, details)]
