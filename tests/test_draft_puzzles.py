"""Draft puzzles (hidden until measured on the H100) stay out of learners' sight, and the device script that
measures them names only puzzles and files that exist. A draft's own checks are in its tests/test_puzzleN.py.
"""

from __future__ import annotations

import shutil
from pathlib import Path

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


def test_the_device_script_names_only_puzzles_and_files_that_exist():
    """benchmarks/device_unverified.sh runs on a GPU lent for minutes: a draft renamed or a sweep moved must
    fail here, not there. Every puzzle it measures or grades is in the catalog (drafts too), every file
    it runs exists, and bash can parse it."""
    import re
    import subprocess

    root = Path(__file__).parents[1]
    script = (root / "benchmarks" / "device_unverified.sh").read_text()
    assert subprocess.run(["bash", "-n", str(root / "benchmarks" / "device_unverified.sh")]).returncode == 0
    puzzles = set(re.findall(r"\b(?:measure|grades|grade_latency\.py|dev check)\s+(puzzle\d+)", script))
    assert {"puzzle9", "puzzle10"} <= puzzles and puzzles <= set(all_puzzles(drafts=True))
    files = set(re.findall(r"\b((?:benchmarks|challenges|tests)/[\w/.-]+\.py)\b", script))
    assert len(files) >= 6 and all((root / f).is_file() for f in files), [f for f in files if not (root / f).is_file()]
    graded = re.findall(r"grades (puzzle\d+) alternatives/(\w+)", script)  # one solution graded alone
    graded += [(pid, name) for pid, names in re.findall(r"regrade (puzzle\d+)((?: alternatives/\w+)+)", script)
               for name in re.findall(r"alternatives/(\w+)", names)]
    assert graded and all(name in get_puzzle(pid, drafts=True).alternatives for pid, name in graded), graded
