"""Where the harness keeps the bytecode of what it imports, and that cache's first filling.

Each harness run is a fresh Python. Its bytecode goes to a cache of the tutor's (PYTHONPYCACHEPREFIX), not beside
the sources: where nothing writes bytecode (PYTHONDONTWRITEBYTECODE, as on the GPU machines we test on, or a
read-only install) it would recompile torch's modules every time (import torch 6.2-8.0 s against 2.1-2.7 s with its
bytecode kept, torchao 11.2 against 4.6 s). Python reads such a cache alone, never the `__pycache__` folders pip
filled as it installed torch: so the cache starts as links to those (hard ones where they can be), which Python
checks against their sources as it would in place (a changed source is compiled again into the cache, the link
replaced).
"""

from __future__ import annotations

import contextlib
import fcntl
import json
import os
import sys
import sysconfig
from pathlib import Path

import platformdirs

# The interpreter's own folders and its installed packages': what every harness imports (torch, numpy, json, ...).
SEEDED_PATHS = ("stdlib", "platstdlib", "purelib", "platlib")
UNSEEDED_FOLDERS = {"site-packages", "dist-packages", "test", "tests", "idlelib", "__pycache__"}


def bytecode_cache(env: dict[str, str]) -> str:
    """The harness's bytecode folder: a PYTHONPYCACHEPREFIX of the learner's own is kept."""
    return env.get("PYTHONPYCACHEPREFIX") or str(Path(platformdirs.user_cache_dir("infprof-tutor")) / "bytecode")


def seed(cache: Path, roots: list[str] | None = None) -> None:
    """Link into `cache` the bytecode already written beside the interpreter's folders and installed packages (or
    beside `roots`), once for each state of those folders (a package installed since adds to a folder's entries, and
    is linked next time).

    A first harness on a fresh machine compiled all it imported into an empty cache: torch, Dynamo and Inductor
    20.6 s against 6.8 s with it filled (`python -c "import torch, torch._dynamo, torch._inductor.compile_fx"` with
    PYTHONPYCACHEPREFIX an empty folder, then a filled one; the 2-core CPU machine, CPU torch 2.13).
    """
    if roots is None:
        roots = [sysconfig.get_path(name) for name in SEEDED_PATHS]
    roots = sorted({p for p in roots if p and os.path.isdir(p)})
    tag = sys.implementation.cache_tag
    state = json.dumps({root: os.stat(root).st_mtime_ns for root in roots})
    marker = cache / f"seeded-{tag}.json"
    if _read(marker) == state:
        return
    try:
        cache.mkdir(parents=True, exist_ok=True)
        # Harnesses starting at once (a test suite's processes) wait for one seeding, not each do their own.
        with open(cache / f"seeding-{tag}.lock", "w") as lock:
            fcntl.flock(lock, fcntl.LOCK_EX)
            if _read(marker) == state:
                return
            for root in roots:
                for folder, subfolders, _ in os.walk(root):
                    if "__pycache__" in subfolders:
                        _link_all(Path(folder, "__pycache__"), cache / Path(folder).relative_to("/"), tag)
                    # Another root of its own (a venv's site-packages sits in its lib folder), or tests no harness runs.
                    subfolders[:] = [s for s in subfolders if s not in UNSEEDED_FOLDERS]
            partial = marker.with_suffix(f".{os.getpid()}")
            partial.write_text(state)
            os.replace(partial, marker)
    except OSError:
        pass  # a cache that cannot be written (a read-only home): the harness compiles what it imports, as before


def _read(path: Path) -> str | None:
    try:
        return path.read_text()
    except OSError:
        return None


def _link_all(pycache: Path, mirror: Path, tag: str) -> None:
    """Link each of `pycache`'s plain bytecode files (not -O's) where Python's prefix layout looks for it."""
    suffix = f".{tag}.pyc"
    try:
        wanted = [n for n in os.listdir(pycache) if n.endswith(suffix)]
        if wanted:
            mirror.mkdir(parents=True, exist_ok=True)
    except OSError:
        return  # a folder this user cannot read: its modules are compiled into the cache as they are imported
    for name in wanted:
        try:
            os.link(pycache / name, mirror / name)  # a fifth of a symbolic link's time here
        except FileExistsError:
            pass  # compiled there already
        except OSError:  # another file system, or a file of another user's (fs.protected_hardlinks)
            with contextlib.suppress(OSError):  # none at all: the module is compiled into the cache as it is imported
                os.symlink(pycache / name, mirror / name)
