"""The shared bottleneck taxonomy: ids a learner can name, and what each means."""

from __future__ import annotations

import tomllib
from functools import cache
from pathlib import Path

TAXONOMY_FILE = Path(__file__).with_name("taxonomy.toml")


@cache
def bottlenecks() -> dict[str, str]:
    """id -> one-line meaning, in file order."""
    with TAXONOMY_FILE.open("rb") as f:
        return dict(tomllib.load(f)["bottlenecks"])
