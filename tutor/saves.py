"""Saves of a puzzle's editable files, watched one way for both faces (the CLI's `watch`, the TUI's watch mode)."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, AsyncIterator, Iterator

if TYPE_CHECKING:
    import asyncio

    from tutor.catalog import Puzzle
    from tutor.workspace import Workspace

DEBOUNCE_MS = 400  # editors write a file in several steps: one check per save


def _only_editable(puzzle: Puzzle):
    names = set(puzzle.editable)
    return lambda _change, path: Path(path).name in names


def saves(ws: Workspace, puzzle: Puzzle) -> Iterator[list[Path]]:
    """The editable files saved, one list per save, until interrupted."""
    from watchfiles import watch

    for changes in watch(ws.puzzle_dir(puzzle), debounce=DEBOUNCE_MS, watch_filter=_only_editable(puzzle)):
        yield sorted({Path(path) for _, path in changes})


async def saves_async(ws: Workspace, puzzle: Puzzle, stop: asyncio.Event) -> AsyncIterator[list[Path]]:
    """As `saves`, in an event loop, until `stop` is set."""
    from watchfiles import awatch

    async for changes in awatch(ws.puzzle_dir(puzzle), stop_event=stop, debounce=DEBOUNCE_MS,
                                watch_filter=_only_editable(puzzle)):
        yield sorted({Path(path) for _, path in changes})
