"""The learner's answer.toml: the bottleneck they name and the profile numbers they cite."""

from __future__ import annotations

import re
import tomllib
from dataclasses import dataclass
from pathlib import Path

from tutor.errors import TutorError
from tutor.grading.verdict import Verdict

TEMPLATE_HELP = (
    'answer.toml needs  bottleneck = "<id>"  and one [[evidence]] table per cited number:\n'
    '  [[evidence]]\n  metric = "<a metric name from your profile>"\n  value = <the value it showed>'
)  # no real metric: one of a GPU's would mislead on a CPU puzzle, and the other way round
# The same in one line, for a panel that has little room.
FORMAT_HINT = ('bottleneck = "<id>", then one [[evidence]] table (metric = "<name>", value = <number>) '
               'per number you cite')


class AnswerError(TutorError):
    """answer.toml cannot be read: the file, the line (and column) at fault when known, and that line."""

    def __init__(self, path: Path, problem: str, line: int | None = None, column: int | None = None,
                 source: str = "") -> None:
        where = (f", line {line}" + (f", column {column}" if column else "")) if line else ""
        super().__init__(f"{path.name}{where}: {problem}", TEMPLATE_HELP)
        self.path, self.line, self.column = path, line, column
        lines = source.splitlines()
        self.source_line = lines[line - 1] if line and line <= len(lines) else ""

    def excerpt(self) -> list[str]:
        """The line at fault with its number, and a caret under the column when tomllib gave one."""
        if not self.source_line:
            return []
        gutter = f"{self.line:>3} │ "
        lines = [gutter + self.source_line]
        if self.column:
            lines.append(" " * (len(gutter) - 2) + "│ " + " " * (self.column - 1) + "^")
        return lines


def answer_problem(path: Path) -> AnswerError | None:
    """Why answer.toml cannot be read, or None: the faces show it as a panel beside the verdict."""
    try:
        read_answer(path)
    except AnswerError as e:
        return e
    except TutorError:
        return None  # missing, or the template's empty bottleneck: an answer not given yet; the diagnosis says so
    return None


def readable_answer(path: Path | None) -> Answer | None:
    """The answer, or None where there is none or it cannot be read (the diagnosis says why)."""
    try:
        return read_answer(path) if path else None
    except TutorError:
        return None


def unreadable_answer(verdict: Verdict, path: Path) -> AnswerError | None:
    """Why answer.toml could not be read, when that is what failed this verdict's diagnosis; else None."""
    problem = answer_problem(path)
    diagnosis = next((c for c in verdict.criteria if c.name == "diagnosis"), None)
    if problem is None or diagnosis is None or diagnosis.passed or diagnosis.summary != problem.message:
        return None  # fixed since the grade read it, or the grade failed the diagnosis for another reason
    return problem


def _nth_line(text: str, pattern: str, n: int = 1) -> int | None:
    """The line number of the n-th line matching `pattern`: where a table or key sits (tomllib gives no positions)."""
    hits = [i for i, line in enumerate(text.splitlines(), start=1) if re.match(pattern, line.strip())]
    return hits[n - 1] if len(hits) >= n else None


def _evidence_line(text: str, n: int, key: str) -> int | None:
    """The line of `key` in the n-th [[evidence]] table, else the table's own line."""
    start = _nth_line(text, r"\[\[\s*evidence\s*\]\]", n)
    if start is None:
        return None
    for i, line in enumerate(text.splitlines()[start:], start=start + 1):
        if line.strip().startswith("["):
            break
        if re.match(rf"{key}\s*=", line.strip()):
            return i
    return start


def _kind(value) -> str:
    if isinstance(value, str):
        return f'text ("{value}"): write the number without quotes' if _is_number(value) else f'text ("{value}")'
    return {bool: "true/false", int: "a number", float: "a number", dict: "a table", list: "a list"}.get(
        type(value), type(value).__name__)


def _is_number(text: str) -> bool:
    try:
        float(text)
    except ValueError:
        return False
    return True


@dataclass(frozen=True)
class Evidence:
    metric: str
    value: float


@dataclass(frozen=True)
class StageAnswer:
    """A later stage's bottleneck (a capstone's answer.toml [[stages]], in order), with its [[stages.evidence]]."""

    bottleneck: str
    evidence: tuple[Evidence, ...]


@dataclass(frozen=True)
class Answer:
    bottleneck: str
    evidence: tuple[Evidence, ...]
    stages: tuple[StageAnswer, ...] = ()


def read_answer(path: Path) -> Answer:
    """Parse answer.toml; every mistake becomes an AnswerError that says where and how to fix it."""
    if not path.is_file():
        raise TutorError(f"{path} does not exist.", "Run `infprof-tutor reset <puzzle>` to restore the template.")
    try:
        text = path.read_text(encoding="utf-8")
    except UnicodeDecodeError as e:
        raise AnswerError(path, "not UTF-8 text: save it as UTF-8.") from e
    try:
        data = tomllib.loads(text)
    except tomllib.TOMLDecodeError as e:
        # tomllib puts the position in its message only: "... (at line 3, column 10)" or "(at end of document)".
        found = re.search(r"\(at line (\d+), column (\d+)\)", str(e))
        reason = re.sub(r"\s*\(at (line \d+, column \d+|end of document)\)", "", str(e)) or "a syntax error"
        line, column = (int(found[1]), int(found[2])) if found else (None, None)
        if "(at end of document)" in str(e):
            reason += " at the end of the file: is a bracket or quote left open?"
            line = len(text.splitlines()) or None
        raise AnswerError(path, f"not valid TOML ({reason}).", line, column, text) from e
    bottleneck = data.get("bottleneck", "")
    if not isinstance(bottleneck, str):
        raise AnswerError(path, f'bottleneck is {_kind(bottleneck)}: write it as text, bottleneck = "<id>".',
                          _nth_line(text, r"bottleneck\s*="), source=text)
    if not bottleneck.strip():  # the untouched template: an answer not given yet, not a broken file
        raise TutorError(f"{path.name} names no bottleneck.", TEMPLATE_HELP)
    evidence = _evidence(path, text, data.get("evidence", []), "evidence")
    stages = data.get("stages", [])
    if not isinstance(stages, list) or not all(isinstance(st, dict) for st in stages):
        raise AnswerError(path, "stages must be a list of [[stages]] tables.",
                          _nth_line(text, r"(stages\s*=|\[\s*stages\s*\])"), source=text)
    later = []
    for n, st in enumerate(stages, start=2):
        named = st.get("bottleneck", "")
        if not isinstance(named, str):
            raise AnswerError(path, f'stage {n}\'s bottleneck is {_kind(named)}: write it as text, bottleneck = "<id>".',
                              _nth_line(text, r"\[\[\s*stages\s*\]\]", n - 1), source=text)
        later.append(StageAnswer(named.strip(), _evidence(path, text, st.get("evidence", []), f"stage {n}'s evidence")))
    return Answer(bottleneck.strip(), tuple(evidence), tuple(later))


def _evidence(path: Path, text: str, items, what: str) -> tuple[Evidence, ...]:
    """An [[evidence]] list (or a stage's [[stages.evidence]]): each a metric's name and the value cited."""
    table = "evidence" if what == "evidence" else "stages.evidence"
    if not isinstance(items, list):
        raise AnswerError(path, f"{what} must be a list of [[{table}]] tables.",
                          _nth_line(text, rf"({table}\s*=|\[\s*{table}\s*\])"), source=text)
    evidence = []
    for i, item in enumerate(items, start=1):
        metric, value = (item.get("metric"), item.get("value")) if isinstance(item, dict) else (None, None)
        if not isinstance(metric, str) or isinstance(value, bool) or not isinstance(value, (int, float)):
            key, got = ("metric", metric) if not isinstance(metric, str) else ("value", value)
            wrong = ("it is not a table" if not isinstance(item, dict) else
                     f"its {key} is missing" if got is None else f"its {key} is {_kind(got)}")
            line = _evidence_line(text, i, key) if what == "evidence" else _nth_line(text, r"\[\[\s*stages\.evidence")
            raise AnswerError(path, f"{what} #{i} needs a metric name (text) and a value (a number); {wrong}.",
                              line, source=text)
        evidence.append(Evidence(metric.strip(), float(value)))
    return tuple(evidence)
