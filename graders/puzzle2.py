"""puzzle2: serving every batch size must not cost memory that grows with the sizes, nor copies of the weights.

The learner's workload is graded in a process of its own (tutor.harness.lockstep), which
reports what its allocator holds in CUDA graphs' private pools after warm-up (every batch
size 1..64, twice) and the timed rounds: the memory of the very code that was timed. The
rule names each fault it measures, whichever framework captured the graphs:
- weights copied into a graph pool: a pool holding at least the model's 128 MB of weights. A graph's own
  activations at these batch sizes are a few MB; cudagraph trees copy the plain tensors a compiled
  function closes over into their pool (parameters are read in place). Their allocator blocks are
  marked free between replays, so the copies show in the pool's size, not as blocks of a weight's size;
- a pool per graph: no graph reuses another's memory, so memory grows with every size served;
- pool memory that grows as new batch sizes are served (graphs captured lazily, per size).
Measured on the H100: challenges/puzzle2/EXPLORATION.md and challenges/puzzle2/MEASUREMENTS.md.
"""

from __future__ import annotations

from tutor.catalog import Puzzle
from tutor.grading.verdict import Criterion

# spec.py: 8 layers of two HIDDEN 1024 x FFN 4096 bf16 weights; the grader process never imports torch.
WEIGHTS_MB = 8 * 2 * 1024 * 4096 * 2 / 2**20
# One pool per bucket of a small set still reuses memory within it; one per size does not.
MAX_POOLS = 12
# Pool growth per newly captured batch size, between the middle and the end of warm-up. Graphs per
# size in one shared pool keep their outputs only (~0.6 MB a size); a private pool per size, or
# activations kept per graph, cost several MB a size.
MAX_GROWTH_MB_PER_SIZE = 1.5
SIZES, SIZES_BY_MIDDLE = 64, 8  # warm-up serves 8 inputs of 8 sizes, twice; a graph is recorded on a 2nd sighting


def criteria(puzzle: Puzzle, result: dict, answer_path=None, profiles=None) -> list[Criterion]:
    memory = (result.get("memory") or {}).get("candidate")
    if not memory or "graph_pool_mb" not in memory or "graph_pools" not in memory:
        return [Criterion("graph memory", False, "The grade reported no GPU memory figures for your workload.",
                          ["Grade on a CUDA GPU with the current tutor version."])]
    faults = find_faults(memory)
    details = [f"CUDA-graph pools after serving every batch size twice and the timed rounds: "
               f"{memory['graph_pool_mb']:.0f} MB in {memory['graph_pools']} pool(s)",
               f"allocator reserved {memory.get('reserved_mb', 0):.0f} MB in all, "
               f"tensors held {memory.get('allocated_mb', 0):.0f} MB"]
    if "graphs_captured" in memory:
        details.append(f"CUDA graphs captured: {memory['graphs_captured']}")
    if memory.get("compiled_graphs"):
        details.append(f"torch.compile graphs compiled: {memory['compiled_graphs']}")
    if not faults:
        return [Criterion("graph memory", True,
                          f"Every batch size served with {memory['graph_pool_mb']:.0f} MB of graph memory, "
                          "no weight copied, no growth per size.", details)]
    return [Criterion("graph memory", False, faults[0], faults[1:] + details)]


def find_faults(memory: dict) -> list[str]:
    """Each fault the figures show, in the learner's words; empty when there is none."""
    faults = []
    if memory["graph_pool_mb"] >= WEIGHTS_MB:
        faults.append(f"Your graph pools hold {memory['graph_pool_mb']:.0f} MB, as much as the model's "
                      f"{WEIGHTS_MB:.0f} MB of weights: a copy of the weights lives there. Read them in place "
                      "(parameters, or tensors your own graphs capture), never as inputs copied into the pool.")
    if memory["graph_pools"] > MAX_POOLS:
        faults.append(f"Your graphs use {memory['graph_pools']} separate pools: none reuses another's memory. "
                      "Capture them into one shared pool (torch.cuda.graph_pool_handle()).")
    series = memory.get("graph_pool_mb_by_warmup", [])
    if len(series) >= 2:
        growth = (series[-1] - series[len(series) // 2]) / (SIZES - SIZES_BY_MIDDLE)
        if growth > MAX_GROWTH_MB_PER_SIZE:
            faults.append(f"Your graph pools grow by {growth:.1f} MB with every new batch size served "
                          f"(limit {MAX_GROWTH_MB_PER_SIZE:g} MB): serve sizes from a few buckets, or share "
                          "one pool between the graphs.")
    return faults
