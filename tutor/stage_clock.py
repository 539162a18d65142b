"""How long each stage of a run took, read off its stage events as they arrive: where a long grade's time went,
and what a grade of the same code would skip (its compiles and autotuning, kept in the workspace's caches)."""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import Callable

from tutor.protocol import WHO

LONG_S = 60.0  # a run shorter than this needs no account of its time
# A warm-up at least this long, and this share of the run, was mostly compiling: the caches keep what it built.
COMPILING_S, COMPILING_SHARE = 30.0, 0.4


@dataclass
class StageClock:
    clock: Callable[[], float] = time.monotonic
    spans: list[tuple[str, str, float]] = field(default_factory=list)  # (stage, detail, seconds), in order
    _open: tuple[str, str, float] | None = None

    def stage(self, stage: str, detail: str = "") -> None:
        now = self.clock()
        self._close(now)
        self._open = (stage, detail, now)

    def finish(self) -> None:
        self._close(self.clock())
        self._open = None

    def _close(self, now: float) -> None:
        if self._open is not None:
            stage, detail, began = self._open
            self.spans.append((stage, detail, now - began))

    def account(self) -> list[str]:
        """For a long run: its longest stages, and what a grade of the same code would skip; [] for a short one."""
        total = sum(seconds for *_, seconds in self.spans)
        if total < LONG_S:
            return []
        longest = sorted(self.spans, key=lambda span: -span[2])[:3]
        lines = [f"{total:.0f} s in all, most of it in " + "; ".join(
            f"{stage} ({detail}) {seconds:.0f} s" if detail else f"{stage} {seconds:.0f} s"
            for stage, detail, seconds in longest) + "."]
        for whose, cache in ((WHO["candidate"], "your code's"), (WHO["ruler"], "the comparators'")):
            warm = sum(seconds for stage, detail, seconds in self.spans if stage == "warmup" and detail.startswith(whose))
            if warm >= COMPILING_S and warm >= COMPILING_SHARE * total:
                lines.append(f"The warm-up of {whose} took {warm:.0f} s: torch.compile's and Triton's compiles and "
                             f"autotuning happen there, and the workspace keeps what they built ({cache} compile "
                             f"cache, .infprof/compile/). Run again on the same code, they are skipped: the rest of "
                             f"this run took {total - warm:.0f} s.")
        return lines
