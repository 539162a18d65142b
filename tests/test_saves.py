"""tutor.saves, on a real folder: a save is seen from the moment the watcher says it runs, however long the caller
takes to ask, and only the puzzle's editable files count."""

from __future__ import annotations

import asyncio
from types import SimpleNamespace

import pytest

from tutor.saves import saves, saves_async


def _puzzle_folder(tmp_path):
    folder = tmp_path / "puzzle0"
    folder.mkdir()
    ws = SimpleNamespace(puzzle_dir=lambda puzzle: folder)
    return ws, SimpleNamespace(editable=["workload.py", "answer.toml"]), folder


@pytest.mark.timeout(30)  # on a watcher started late the save is never seen: fail, not hang
def test_a_save_made_before_the_caller_asks_is_kept_for_it(tmp_path):
    ws, puzzle, folder = _puzzle_folder(tmp_path)
    watched = saves(ws, puzzle)
    (folder / "notes.txt").write_text("not a puzzle file")
    (folder / "workload.py").write_text("x = 1\n")  # before the first next(): a check would be running now
    assert next(watched) == [folder / "workload.py"]


def test_the_app_is_told_when_the_watcher_runs_and_sees_every_save_after(tmp_path):
    ws, puzzle, folder = _puzzle_folder(tmp_path)

    async def first_save() -> list:
        stop, running = asyncio.Event(), asyncio.Event()
        watched = saves_async(ws, puzzle, stop, running.set)
        seen = asyncio.ensure_future(watched.__anext__())
        await asyncio.wait_for(running.wait(), 30)
        (folder / "answer.toml").write_text('bottleneck = "cpu_overhead"\n')
        saved = await asyncio.wait_for(seen, 30)
        stop.set()
        return saved

    assert asyncio.run(first_save()) == [folder / "answer.toml"]
