"""tutor.harness.genuine_code: code is trusted as its file compiles it, read from import's bytecode cache where that
cache is the source's own and unchanged since the harness started."""

from __future__ import annotations

import importlib.util
import os
import py_compile
import time

from tutor.harness.genuine_code import GenuineCode

SOURCE = "def f(x):\n    return x + 1\n"
OTHER = "def f(x):\n    return x * 9\n"  # as long as SOURCE: only the cache's ctime tells it apart


def _function(source: str, filename: str):
    namespace = {}
    exec(compile(source, filename, "exec", dont_inherit=True), namespace)
    return namespace["f"].__code__


def _module(tmp_path):
    path = tmp_path / "mod.py"
    path.write_text(SOURCE)
    py_compile.compile(str(path), cfile=importlib.util.cache_from_source(str(path)))  # as import writes it
    return str(path)


def _after_start() -> GenuineCode:
    time.sleep(0.1)  # the files' ctimes before the harness's start, past genuine_code.COARSE_CLOCK_S
    return GenuineCode()


def test_a_files_own_code_is_genuine_and_other_code_under_its_name_is_not(tmp_path):
    path = _module(tmp_path)
    genuine = _after_start()
    assert genuine(_function(SOURCE, path))
    assert not genuine(_function(OTHER, path))


def test_a_bytecode_cache_rewritten_after_the_start_is_not_read(tmp_path):
    """A workload that writes its own code into the cache of a trusted file (header and all) gains nothing: the
    cache changed after the harness started, so the source is compiled instead."""
    path = _module(tmp_path)
    genuine = _after_start()
    time.sleep(0.05)  # a file's times come from a coarse clock, up to a few ms behind time.time()
    impostor = tmp_path / "impostor.py"
    impostor.write_text(OTHER)
    source = os.stat(path)
    os.utime(impostor, (source.st_atime, source.st_mtime))  # the header names the trusted source's mtime
    py_compile.compile(str(impostor), cfile=importlib.util.cache_from_source(path))
    assert not genuine(_function(OTHER, path))
    assert genuine(_function(SOURCE, path))


def test_a_cache_as_it_was_before_the_start_is_what_counts_as_the_files_code(tmp_path):
    """Read rather than compiled: where the cache names the source as it is, its code is what import runs, and what
    the file counts as (a cache of other code of the same size, written before the harness started)."""
    path = _module(tmp_path)
    impostor = tmp_path / "impostor.py"
    impostor.write_text(OTHER)
    source = os.stat(path)
    os.utime(impostor, (source.st_atime, source.st_mtime))
    py_compile.compile(str(impostor), cfile=importlib.util.cache_from_source(path))
    genuine = _after_start()
    assert genuine(_function(OTHER, path)) and not genuine(_function(SOURCE, path))


def test_a_stale_bytecode_cache_is_not_read(tmp_path):
    """A cache compiled from another version of the source (its header's mtime or size no longer the file's)."""
    path = tmp_path / "mod.py"
    path.write_text(OTHER)
    py_compile.compile(str(path), cfile=importlib.util.cache_from_source(str(path)))
    path.write_text(SOURCE + "\n")  # a later source of another size: the cache above no longer its own
    genuine = _after_start()
    assert genuine(_function(SOURCE + "\n", str(path)))
    assert not genuine(_function(OTHER, str(path)))


def test_a_torch_function_is_genuine_through_its_cache():
    import torch

    assert GenuineCode()(torch.Tensor.__repr__.__code__)
