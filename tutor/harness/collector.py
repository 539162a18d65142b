"""The garbage collector around what a harness process imports once and keeps to its end.

torch's import leaves ~165,000 objects the cyclic collector tracks. Left in its generations, every full
pass walks them again (0.15 s each on the 2-core machine), and in a forked child that walk writes to
every page holding one, so each fork copies torch's heap. Frozen after the import (gc.freeze: the
collector's permanent generation), they are never walked: a full pass sees only what came after.
"""

from __future__ import annotations

import contextlib
import gc


@contextlib.contextmanager
def imports_kept():
    """Import inside: no collection runs while the imports build their objects (each pass there walks all that the
    earlier imports made), and what they made is frozen once they are done, as it stays reachable anyway."""
    was_enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        gc.freeze()
        if was_enabled:
            gc.enable()
