"""Draft puzzles (hidden until measured on the H100) stay out of learners' sight, and the device scripts that
measure them name only files that exist. A draft's own checks are in its tests/test_puzzleN.py.
"""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from tutor.catalog import all_puzzles, get_puzzle, load_puzzle


def test_a_draft_is_hidden_from_learners_until_asked_for(tmp_path, monkeypatch):
    for pid, draft in (("puzzle0", ""), ("puzzle99", "being measured")):
        shutil.copytree(get_puzzle("puzzle0").folder, tmp_path / pid)
        meta = tmp_path / pid / "puzzle.toml"
        meta.write_text(meta.read_text().replace('id = "puzzle0"', f'id = "{pid}"\ndraft = "{draft}"'))
    assert list(all_puzzles(tmp_path)) == ["puzzle0"]
    assert list(all_puzzles(tmp_path, drafts=True)) == ["puzzle0", "puzzle99"]
    monkeypatch.setenv("INFPROF_DRAFTS", "1")
    assert "puzzle99" in all_puzzles(tmp_path)
    assert load_puzzle(tmp_path / "puzzle99").draft == "being measured" and load_puzzle(tmp_path / "puzzle0").draft == ""


@pytest.mark.parametrize("script", sorted((Path(__file__).parents[1] / "benchmarks").glob("*.sh")),
                         ids=lambda path: path.name)
def test_each_device_script_parses_and_names_only_files_that_exist(script):
    """The benchmarks' shell scripts run on a GPU lent for minutes: a sweep moved or a benchmark renamed must fail
    here, not there. bash can parse each, and every Python file it runs exists."""
    import re
    import subprocess

    root = Path(__file__).parents[1]
    assert subprocess.run(["bash", "-n", str(script)]).returncode == 0
    files = set(re.findall(r"\b((?:benchmarks|challenges|tests)/[\w/.-]+\.py)\b", script.read_text()))
    assert all((root / f).is_file() for f in files), [f for f in files if not (root / f).is_file()]

def test_asking_for_a_draft_by_name_says_it_is_one_and_how_to_see_it(tmp_path, monkeypatch):
    from tutor import catalog
    from tutor.errors import TutorError

    shutil.copytree(get_puzzle("puzzle0").folder, tmp_path / "puzzle99")
    meta = tmp_path / "puzzle99" / "puzzle.toml"
    meta.write_text(meta.read_text().replace('id = "puzzle0"', 'id = "puzzle99"\ndraft = "being measured"'))
    monkeypatch.setattr(catalog, "all_puzzles", lambda drafts=None: all_puzzles(tmp_path, drafts=drafts))
    with pytest.raises(TutorError, match="puzzle99 is a draft, not yet shipped: being measured") as caught:
        catalog.get_puzzle("puzzle99")
    assert "INFPROF_DRAFTS=1" in caught.value.advice
    with pytest.raises(TutorError, match="No puzzle named 'puzzle98'"):
        catalog.get_puzzle("puzzle98")
