"""The learner's answer.toml: the bottleneck they name and the profile numbers they cite."""

from __future__ import annotations

import tomllib
from dataclasses import dataclass
from pathlib import Path

from tutor.errors import TutorError

TEMPLATE_HELP = (
    'answer.toml needs  bottleneck = "<id>"  and one [[evidence]] table per cited number:\n'
    '  [[evidence]]\n  metric = "gpu.busy_fraction"\n  value = 0.67'
)


@dataclass(frozen=True)
class Evidence:
    metric: str
    value: float


@dataclass(frozen=True)
class Answer:
    bottleneck: str
    evidence: tuple[Evidence, ...]


def read_answer(path: Path) -> Answer:
    """Parse answer.toml; every mistake becomes a TutorError that says how to fix it."""
    if not path.is_file():
        raise TutorError(f"{path} does not exist.", "Run `infprof-tutor reset <puzzle>` to restore the template.")
    try:
        data = tomllib.loads(path.read_text())
    except tomllib.TOMLDecodeError as e:
        raise TutorError(f"{path.name} is not valid TOML: {e}", TEMPLATE_HELP) from e
    bottleneck = data.get("bottleneck", "")
    if not isinstance(bottleneck, str) or not bottleneck.strip():
        raise TutorError(f"{path.name} names no bottleneck.", TEMPLATE_HELP)
    items = data.get("evidence", [])
    if not isinstance(items, list):
        raise TutorError(f"{path.name}: evidence must be a list of [[evidence]] tables.", TEMPLATE_HELP)
    evidence = []
    for i, item in enumerate(items, start=1):
        metric, value = (item.get("metric"), item.get("value")) if isinstance(item, dict) else (None, None)
        if not isinstance(metric, str) or isinstance(value, bool) or not isinstance(value, (int, float)):
            raise TutorError(f"{path.name}: evidence #{i} needs a metric name (text) and a value (a number).", TEMPLATE_HELP)
        evidence.append(Evidence(metric.strip(), float(value)))
    return Answer(bottleneck.strip(), tuple(evidence))
