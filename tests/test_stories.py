"""Stories show what users see; the profile shows the cause (issue 38). A story's prose (its code blocks aside: the
code as it stands may say anything) names neither the bottleneck its puzzle accepts nor that bottleneck's
mechanism; the hints and the review reveal them, a step at a time."""

from __future__ import annotations

import re

import pytest

from tutor.catalog import all_puzzles

# Words that give each class away: its name, or the mechanism behind it.
TELLS = {
    "cpu_overhead": ["interpreter", "python overhead", "dispatch overhead", "host-bound", "cpu-bound"],
    "dequantization_overhead": ["dequant", "unpack", "expanded to"],
    "host_sync": [".item()", "synchron", "waits for everything", "the host stops"],
    "launch_overhead": ["launch overhead", "small launches", "launch latency", "each launch costs", "launches a step"],
    "global_memory_traffic": ["copies the old", "copies every", "allocates a new", "does not extend"],
    "h2d_d2h_copy": ["pageable", "pinned", "staging", "host memory ->"],
    "graph_pools": ["graph pool", "private pool", "new cuda graph", "records a new", "graph per"],
    "atomics_contention": ["contention", "contended", "serialis", "same address"],
    "bank_conflicts": ["bank"],
    "register_spills": ["spill", "local memory", "registers per thread"],
    "uncoalesced_access": ["uncoalesced", "strided access", "scattered"],
    "low_occupancy": ["occupancy", "resident", "warps per sm", "blocks per sm", "hide the latency", "shared memory"],
    "warp_divergence": ["diverg", "take different branches", "run serially", "lanes of a warp"],
    "wave_tile_quantization": ["wave", "tail effect", "idle sms"],
    "l2_misses": ["l2 miss", "hit rate", "evict", "reuse distance"],
    "batching_policy": ["head-of-line", "wait for the one request", "then wait for", "continuous batching"],
    "collective_communication": ["one all-reduce per", "per row", "many small collectives", "latency-bound"],
    "inter_sm_traffic": ["split-k", "partial sums", "partial products", "exchange", "cross-cta", "across sms"],
    "recompilation": ["recompil", "compiles again", "re-trace", "retrac", "guard", "recompile_limit",
                      "cache_size_limit", "falls back to eager", "runs eagerly"],
    "tensor_cores_idle": ["tensor core", "tf32", "bf16", "fp32", "precision", "fma pipe", "cuda cores", "simt",
                          "float32"],
    "memory_fragmentation": ["fragment", "empty_cache", "caching allocator", "cudafree", "cudamalloc", "segment",
                             "hands back", "gives back", "reserved"],
    "load_imbalance": ["imbalance", "uneven", "unbalanced", "popular", "skew", "placement", "80%", "most of the tokens"],
    "pipeline_bubbles": ["bubble", "micro-batch", "microbatch", "one after the other", "waits for the other",
                         "idle while", "spin", "overlap"],
}
# Sentences the stories once held (issue 38 quotes them): each gives its class away.
ONCE = {
    "host_sync": "That one line turns a GPU tensor into a Python `bool`, so after every token the host stops, waits "
                 "for everything it has queued...",
    "global_memory_traffic": "torch.cat does not extend anything: it allocates a new cache one token longer and copies "
                             "the old one into it.",
    "launch_overhead": "each launch costs more than the kernel it starts, and torch.nonzero makes the host ask the GPU",
    "batching_policy": "most requests finish their tokens in a few dozen steps and then wait for the one request in "
                       "their batch that wants hundreds.",
    "graph_pools": "Each new size records a new CUDA graph, and GPU memory kept climbing",
}
PUZZLES = sorted(all_puzzles(drafts=True).values(), key=lambda p: int(p.id.removeprefix("puzzle")))


def prose(story: str) -> str:
    """The story less its fenced code, lower case, one line."""
    return " ".join(re.sub(r"```.*?```", " ", story, flags=re.S).lower().split())


def given_away(text: str, classes) -> list[str]:
    return [f"{c}: {w!r}" for c in classes for w in TELLS[c] if w in prose(text)]


@pytest.mark.parametrize("puzzle", PUZZLES, ids=[p.id for p in PUZZLES])
def test_no_story_names_its_bottleneck_or_its_mechanism(puzzle):
    assert set(puzzle.diagnosis.accepted) <= set(TELLS), "a class with no tells: add its words"
    assert not given_away(puzzle.story, puzzle.diagnosis.accepted), puzzle.id


@pytest.mark.parametrize("cls", sorted(ONCE))
def test_the_sentences_the_stories_once_held_would_fail(cls):
    assert given_away(ONCE[cls], [cls])
