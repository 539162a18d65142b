"""What the TUI remembers between sessions (the theme picked in the command palette), beside the remembered workspace.

Read at every call, not at import, so $XDG_CONFIG_HOME set by a test or a
benchmark is honoured. A missing or unreadable file means the defaults.
"""

from __future__ import annotations

import json
from pathlib import Path

import platformdirs


def settings_path() -> Path:
    return Path(platformdirs.user_config_dir("infprof-tutor")) / "tui.json"


def load_settings() -> dict:
    try:
        data = json.loads(settings_path().read_text())
    except (OSError, ValueError):
        return {}
    return data if isinstance(data, dict) else {}


def save_setting(key: str, value: object) -> None:
    path = settings_path()
    data = {**load_settings(), key: value}
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(json.dumps(data, indent=2) + "\n")
    except OSError:
        pass  # a read-only home: the choice lasts for this session only
