"""The harness's bytecode cache starts as links to the bytecode pip wrote beside the installed packages."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import numpy

from tutor.bytecode import seed


def mirrored(cache: Path, source: str) -> Path:
    """Where Python's PYTHONPYCACHEPREFIX layout keeps the bytecode of `source`."""
    path = Path(source)
    return cache / path.parent.relative_to("/") / f"{path.stem}.{sys.implementation.cache_tag}.pyc"


def installed_bytecode(source: str) -> Path:
    path = Path(source)
    return path.parent / "__pycache__" / f"{path.stem}.{sys.implementation.cache_tag}.pyc"


def test_the_cache_links_the_installed_bytecode_and_python_reads_it_there(tmp_path):
    cache = tmp_path / "bytecode"
    seed(cache)
    numpy_kept = mirrored(cache, numpy.__file__)
    assert numpy_kept.samefile(installed_bytecode(numpy.__file__))
    assert not list(cache.rglob("numpy/tests/*.pyc"))  # tests no harness imports are left out

    # A fresh Python reading this cache finds numpy's bytecode there: it compiles nothing of numpy's again.
    env = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
    env["PYTHONPYCACHEPREFIX"] = str(cache)
    subprocess.run([sys.executable, "-c", "import numpy"], env=env, check=True, timeout=120)
    assert numpy_kept.samefile(installed_bytecode(numpy.__file__))
    assert not [p for p in cache.rglob("numpy/**/*.pyc") if p.stat().st_nlink == 1 and not p.is_symlink()]


def test_the_cache_is_seeded_once_for_each_state_of_the_installed_packages(tmp_path):
    cache = tmp_path / "bytecode"
    seed(cache)
    numpy_kept = mirrored(cache, numpy.__file__)
    numpy_kept.unlink()
    seed(cache)  # nothing installed since: the links are not made again
    assert not numpy_kept.exists()

    marker = next(cache.glob("seeded-*.json"))
    state = json.loads(marker.read_text())
    marker.write_text(json.dumps({root: mtime - 1 for root, mtime in state.items()}))  # as if a package came since
    seed(cache)
    assert numpy_kept.samefile(installed_bytecode(numpy.__file__))
    assert json.loads(marker.read_text()) == state


def test_a_cache_that_cannot_be_written_leaves_the_harness_as_it_was(tmp_path):
    (tmp_path / "file").write_text("")
    seed(tmp_path / "file" / "bytecode")  # not a folder: nothing to seed, and no error for the run that starts
    assert not (tmp_path / "file" / "bytecode").exists()
