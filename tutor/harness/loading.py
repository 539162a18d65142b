"""Load puzzle spec and workload modules from file paths, with learner-readable failures."""

from __future__ import annotations

import importlib.util
import sys
import traceback
from pathlib import Path
from types import ModuleType


class HarnessFailure(Exception):
    """A failure to report as a protocol error event (kind from protocol.ERROR_KINDS)."""

    def __init__(self, kind: str, message: str, where: str = "", tb: str = ""):
        super().__init__(message)
        self.kind, self.message, self.where, self.tb = kind, message, where, tb


def load_module(path: Path, name: str, required: tuple[str, ...]) -> ModuleType:
    """Import `path` as a fresh module named `name`; check it defines `required` callables."""
    spec = importlib.util.spec_from_file_location(f"infprof_{name}", path)
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    try:
        spec.loader.exec_module(module)
    except ModuleNotFoundError as e:
        raise HarnessFailure("missing_package", f"{path.name} imports '{e.name}', which is not installed",
                             where=name, tb=traceback.format_exc()) from e
    except Exception as e:  # a learner's file can fail in any way at import
        raise HarnessFailure("import_error", f"{path.name} failed to load: {type(e).__name__}: {e}",
                             where=name, tb=traceback.format_exc()) from e
    missing = [f for f in required if not callable(getattr(module, f, None))]
    if missing:
        raise HarnessFailure("bad_workload", f"{path.name} must define {', '.join(f + '()' for f in missing)}", where=name)
    return module


def call_workload(where: str, fn, *args):
    """Call learner-visible code, turning exceptions into HarnessFailure (OOM recognised)."""
    try:
        return fn(*args)
    except Exception as e:
        kind = "oom" if _is_oom(e) else "workload_error"
        raise HarnessFailure(kind, f"{where} raised {type(e).__name__}: {str(e)[:500]}", where=where,
                             tb=traceback.format_exc()) from e


def _is_oom(e: Exception) -> bool:
    text = str(e).lower()
    # CUDA says "out of memory"; torch's CPU allocator says "can't allocate memory".
    return type(e).__name__ == "OutOfMemoryError" or any(
        words in text for words in ("out of memory", "can't allocate memory", "cannot allocate memory"))


def warmup_inputs(spec, seed: int, device_name: str) -> list:
    """What warm-up serves: the spec's own list if it has one (say, every batch size a server will
    see, so graphs and compiles happen before anything is timed), else one fresh input."""
    if callable(getattr(spec, "warmup_inputs", None)):
        return list(call_workload("spec.warmup_inputs", spec.warmup_inputs, seed, device_name))
    return [call_workload("spec.make_input", spec.make_input, seed, device_name)]
