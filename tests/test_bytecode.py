"""The harness's bytecode cache starts as links to the bytecode pip wrote beside the installed packages."""

from __future__ import annotations

import json
import os
import py_compile
import subprocess
import sys
from pathlib import Path

import numpy
import pytest

from tutor.bytecode import seed

TAG = sys.implementation.cache_tag


def mirrored(cache: Path, source: Path) -> Path:
    """Where Python's PYTHONPYCACHEPREFIX layout keeps the bytecode of `source`."""
    return cache / source.parent.relative_to("/") / f"{source.stem}.{TAG}.pyc"


def installed_bytecode(source: Path) -> Path:
    return source.parent / "__pycache__" / f"{source.stem}.{TAG}.pyc"


@pytest.fixture
def site(tmp_path) -> Path:
    """A folder of installed packages as pip leaves it: a package's sources, its bytecode beside them, its tests."""
    folder = tmp_path / "site"
    for name in ("pkg/__init__.py", "pkg/inner.py", "pkg/tests/test_pkg.py"):
        path = folder / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text("from pkg import inner\n" if name == "pkg/__init__.py" else "VALUE = 1\n")
        py_compile.compile(str(path), cfile=str(installed_bytecode(path)))
    return folder


def test_the_cache_links_the_installed_bytecode_and_python_reads_it_there(site, tmp_path):
    cache = tmp_path / "bytecode"
    seed(cache, [str(site)])
    sources = [site / "pkg/__init__.py", site / "pkg/inner.py"]
    assert all(mirrored(cache, s).samefile(installed_bytecode(s)) for s in sources)
    assert not mirrored(cache, site / "pkg/tests/test_pkg.py").exists()  # tests no harness imports are left out

    # A fresh Python reading this cache finds the package's bytecode there: it compiles nothing of it again.
    env = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
    env.update(PYTHONPYCACHEPREFIX=str(cache), PYTHONPATH=str(site))
    subprocess.run([sys.executable, "-c", "import pkg"], env=env, check=True, timeout=60)
    assert all(mirrored(cache, s).samefile(installed_bytecode(s)) for s in sources)

    # A source changed since it was installed is compiled again into the cache, its installed bytecode left as it was.
    installed = installed_bytecode(sources[1]).read_bytes()
    sources[1].write_text("VALUE = 2  # changed\n")
    subprocess.run([sys.executable, "-c", "import pkg.inner; assert pkg.inner.VALUE == 2"], env=env, check=True,
                   timeout=60)
    assert not mirrored(cache, sources[1]).samefile(installed_bytecode(sources[1]))
    assert installed_bytecode(sources[1]).read_bytes() == installed


def test_the_cache_is_seeded_once_for_each_state_of_the_installed_packages(site, tmp_path):
    cache = tmp_path / "bytecode"
    seed(cache, [str(site)])
    kept = mirrored(cache, site / "pkg/inner.py")
    kept.unlink()
    seed(cache, [str(site)])  # nothing installed since: the links are not made again
    assert not kept.exists()

    (site / "another").mkdir()  # a package installed since
    seed(cache, [str(site)])
    assert kept.samefile(installed_bytecode(site / "pkg/inner.py"))
    assert json.loads(next(cache.glob("seeded-*.json")).read_text()) == {str(site): site.stat().st_mtime_ns}


def test_the_interpreters_own_packages_are_linked_where_pip_wrote_their_bytecode(tmp_path):
    numpy_init = Path(numpy.__file__)
    if not installed_bytecode(numpy_init).exists():
        pytest.skip("numpy was installed without its bytecode (pip --no-compile): nothing to link")
    seed(tmp_path / "bytecode")
    assert mirrored(tmp_path / "bytecode", numpy_init).samefile(installed_bytecode(numpy_init))


def test_a_cache_that_cannot_be_written_leaves_the_harness_as_it_was(tmp_path):
    (tmp_path / "file").write_text("")
    seed(tmp_path / "file" / "bytecode")  # not a folder: nothing to seed, and no error for the run that starts
    assert not (tmp_path / "file" / "bytecode").exists()
