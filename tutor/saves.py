"""Saves of a puzzle's editable files, watched one way for both faces (the CLI's `watch`, the TUI's watch mode).

A save is seen from the moment the watcher runs, not from the moment the learner is told "watching": both faces
start it first and say so after, so a save made while the first check runs, or just after, is never lost.
"""

from __future__ import annotations

import itertools
from pathlib import Path
from typing import TYPE_CHECKING, AsyncIterator, Callable, Iterator

if TYPE_CHECKING:
    import asyncio

    from tutor.catalog import Puzzle
    from tutor.workspace import Workspace

DEBOUNCE_MS = 400  # editors write a file in several steps: one check per save
# How often the watcher reports that nothing was saved: its first report says it runs (watchfiles starts watching
# before it waits, and keeps what happens between two waits).
TICK_MS = 200


def _only_editable(puzzle: Puzzle):
    names = set(puzzle.editable)
    return lambda _change, path: Path(path).name in names


def _saved(changes) -> list[Path]:
    return sorted({Path(path) for _, path in changes})


def saves(ws: Workspace, puzzle: Puzzle) -> Iterator[list[Path]]:
    """The editable files saved, one list per save, until interrupted. Watching from before it returns."""
    from watchfiles import watch

    changes = watch(ws.puzzle_dir(puzzle), debounce=DEBOUNCE_MS, watch_filter=_only_editable(puzzle),
                    rust_timeout=TICK_MS, yield_on_timeout=True)
    first = next(changes)  # the watcher runs: a save from here on is kept for the loop that reads it
    return (_saved(c) for c in itertools.chain([first], changes) if c)


async def saves_async(ws: Workspace, puzzle: Puzzle, stop: asyncio.Event,
                      on_watching: Callable[[], None] = lambda: None) -> AsyncIterator[list[Path]]:
    """As `saves`, in an event loop, until `stop` is set; `on_watching()` once the watcher runs."""
    from watchfiles import awatch

    told = False
    async for changes in awatch(ws.puzzle_dir(puzzle), stop_event=stop, debounce=DEBOUNCE_MS,
                                watch_filter=_only_editable(puzzle), rust_timeout=TICK_MS, yield_on_timeout=True):
        if not told:
            told = True
            on_watching()
        if changes:
            yield _saved(changes)
