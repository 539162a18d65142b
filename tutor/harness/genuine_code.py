"""Whether running code is a trusted file's own: the code object its file compiles to, the file as it was when
the harness started.

The harness trusts some code by where it comes from (torch's, the standard library's, the spec's). A file name is
only what the code says of itself: a workload can compile its own source under the name of torch's files. Code
objects compare without their file name, so code is genuine where the file's own source, compiled again, holds an
equal one at the same place; a file changed since the harness started (its ctime, which os.utime cannot set back)
holds none.
"""

from __future__ import annotations

import _imp
import importlib.util
import marshal
import os
import time
import types


# Frozen modules whose code names them otherwise than they are frozen: importlib's bootstrap, which runs an import
# statement's `from package import name` (_handle_fromlist) wherever one runs.
FROZEN_AS = {"importlib._bootstrap": "_frozen_importlib", "importlib._bootstrap_external": "_frozen_importlib_external"}


def folder(path: str) -> str:
    """`path` as a folder prefix: a file inside it starts with it, a sibling named alike does not."""
    return os.path.join(os.path.realpath(path), "")


def package_place(name: str) -> str | None:
    """A package's folder, or a single-file module's file, found without importing it."""
    spec = importlib.util.find_spec(name)
    if spec is None or not spec.origin:
        return None
    return os.path.dirname(spec.origin) if spec.submodule_search_locations else spec.origin


# A file's times come from the kernel's coarse clock, a few milliseconds behind time.time(): a bytecode cache written
# just after the harness started could read as written before. One written this close to the start is not read (the
# source is compiled instead).
COARSE_CLOCK_S = 0.05


class GenuineCode:
    """Made before learner code loads; called with a code object, says whether its file compiles to it."""

    def __init__(self) -> None:
        self._since = time.time()
        self._compiled: dict[str, dict[tuple[str, int], list[types.CodeType]]] = {}  # per file, its code by place

    def __call__(self, code: types.CodeType) -> bool:
        found = self._compiled.get(code.co_filename)
        if found is None:
            found = self._compiled[code.co_filename] = _code_by_place(self._compile(code.co_filename))
        return any(code == known for known in found.get((code.co_name, code.co_firstlineno), ()))

    def _compile(self, filename: str) -> types.CodeType | None:
        """What `filename` compiles to, or None where it cannot be read as it was when the harness started."""
        if filename.startswith("<frozen "):
            name = filename[len("<frozen "):-1]
            try:
                return _imp.get_frozen_object(FROZEN_AS.get(name, name))
            except ImportError:
                return None
        try:
            source = os.stat(filename)
            if source.st_ctime > self._since:
                return None
            cached = self._cached(filename, source)
            if cached is not None:
                return cached
            with open(filename, "rb") as f:
                return compile(f.read(), filename, "exec", dont_inherit=True)
        except (OSError, SyntaxError, ValueError):
            return None

    def _cached(self, filename: str, source: os.stat_result) -> types.CodeType | None:
        """What import loaded `filename` from, a twentieth of a compile's time: its bytecode cache, where the cache
        too is as it was when the harness started and its header says it was compiled from the source as it is
        (the mtime and size import checks, PEP 552); else None, and the source is compiled."""
        try:
            path = importlib.util.cache_from_source(filename)
            if os.stat(path).st_ctime > self._since - COARSE_CLOCK_S:
                return None
            with open(path, "rb") as f:
                data = f.read()
        except (OSError, NotImplementedError, ValueError):
            return None
        header = data[:16]
        if (len(header) < 16 or header[:4] != importlib.util.MAGIC_NUMBER or int.from_bytes(header[4:8], "little")
                or int.from_bytes(header[8:12], "little") != int(source.st_mtime) & 0xFFFFFFFF
                or int.from_bytes(header[12:16], "little") != source.st_size & 0xFFFFFFFF):
            return None  # another Python's, hash-checked (flags set), or stale
        try:
            code = marshal.loads(data[16:])
        except (EOFError, ValueError, TypeError):
            return None
        return code if isinstance(code, types.CodeType) else None


def _code_by_place(top: types.CodeType | None) -> dict[tuple[str, int], list[types.CodeType]]:
    """Every code object in `top`, its nested functions' included, by name and first line."""
    found: dict[tuple[str, int], list[types.CodeType]] = {}
    todo = [top] if top is not None else []
    while todo:
        code = todo.pop()
        found.setdefault((code.co_name, code.co_firstlineno), []).append(code)
        todo += [c for c in code.co_consts if isinstance(c, types.CodeType)]
    return found
