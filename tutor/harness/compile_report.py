"""What torch.compile did in this process, and what it did not: graphs, graph breaks, recompiles, CUDA graphs skipped.

A torch.compile(mode="reduce-overhead") that quietly skips its CUDA graphs runs slower than
eager (torchao's fp8 model did, at 0.455 ms a call on the H100, with no word said). The
reasons are only logged, so the harness turns on torch's own log artifacts for them before
any workload loads and keeps every message, beside torch's counters.
"""

from __future__ import annotations

import logging

from tutor.harness.memory_facts import dynamo_graphs

MAX_REASONS = 5  # per kind: the first ones name the cause; the rest repeat it
# torch's log artifact -> what its messages report (graph breaks are read from dynamo's own counter).
ARTIFACTS = {"cudagraphs": "cudagraph_skips", "recompiles": "recompiles"}
# dynamo's warning, once a function, when it stops compiling it: every shape it has no graph for runs eagerly after.
LIMIT_WORDS = ("hit config.recompile_limit", "hit config.cache_size_limit")
# torch's own loggers stop propagation at each of these: a handler on "torch" alone hears nothing.
LOGGERS = ("torch", "torch._dynamo", "torch._inductor")


class _Keep(logging.Handler):
    def __init__(self, reasons: dict[str, list[str]], seen: dict[str, int]):
        super().__init__(logging.DEBUG)
        self.reasons, self.seen = reasons, seen

    def emit(self, record: logging.LogRecord) -> None:
        kind = ARTIFACTS.get(record.name.rsplit(".__", 1)[-1])
        if kind is None and not record.name.startswith("torch._dynamo"):
            return
        try:
            text = record.getMessage().strip()
        except Exception:  # noqa: BLE001 - a message that fails to format is still a skip
            text = str(record.msg)
        if kind is None:
            if not any(words in text for words in LIMIT_WORDS):
                return
            kind, text = "recompile_limit", " ".join(line.strip() for line in text.splitlines()[:2])
        if kind == "cudagraph_skips" and "skipping cudagraphs" not in text:
            return  # the same artifact also logs successful recordings
        self.seen[kind] = self.seen.get(kind, 0) + 1
        kept = self.reasons.setdefault(kind, [])
        first_line = text.splitlines()[0][:300] if text else ""
        if len(kept) < MAX_REASONS and first_line not in kept:
            kept.append(first_line)


class CompileWatch:
    """Installed before workloads load; `report()` after they ran."""

    def __init__(self) -> None:
        self.reasons: dict[str, list[str]] = {}
        self.seen: dict[str, int] = {}  # messages per kind
        try:
            import torch._logging
            torch._logging.set_logs(**{artifact: True for artifact in ARTIFACTS})
        except (ImportError, ValueError, TypeError):
            return  # a torch without these artifacts: counts only
        keep = _Keep(self.reasons, self.seen)
        for name in LOGGERS:
            logging.getLogger(name).addHandler(keep)

    def report(self) -> dict:
        """Counts and first reasons; empty when torch.compile never ran."""
        graphs = dynamo_graphs()
        if graphs is None or (not graphs and not self.seen):
            return {}
        from torch._dynamo.utils import counters

        breaks = counters["graph_break"]  # reason -> count
        reasons = {**self.reasons, "graph_breaks": [str(r).splitlines()[0][:300] for r in list(breaks)[:MAX_REASONS]]}
        return {"compiled_graphs": graphs, "graph_breaks": int(sum(breaks.values())),
                "recompiles": self.seen.get("recompiles", 0),
                "recompile_limit_hits": self.seen.get("recompile_limit", 0),
                "cudagraph_skips": int(counters["inductor"]["cudagraph_skips"]),
                "reasons": {k: v for k, v in reasons.items() if v}}

