"""Which editor opens a learner's file from the tutor: $VISUAL, $EDITOR, else the first common one installed."""

from __future__ import annotations

import os
import shlex
import shutil

FALLBACK_EDITORS = ("nano", "vim", "vi")


def editor_command() -> list[str] | None:
    for var in ("VISUAL", "EDITOR"):
        if os.environ.get(var, "").strip():
            return shlex.split(os.environ[var])
    found = next((e for e in FALLBACK_EDITORS if shutil.which(e)), None)
    return [found] if found else None
