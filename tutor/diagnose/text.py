"""A diagnosis in words, as the CLI prints it and the app shows it: from its stored form (Diagnosis.to_dict), so a
report kept in the progress db reads the same later."""

from __future__ import annotations

import textwrap

from tutor.catalog import all_puzzles

WIDTH = 78


def teaching_puzzles() -> dict[str, str]:
    """Each class, and the first shipped puzzle that teaches it ("puzzle12: A transpose at ...")."""
    taught: dict[str, str] = {}
    for p in all_puzzles(drafts=False).values():
        for name in p.diagnosis.accepted:
            taught.setdefault(name, f"{p.id}: {p.title}")
    return taught


def report_text(report: dict, width: int = WIDTH) -> str:
    findings, taught = report["findings"], teaching_puzzles()
    if not findings:
        lines = ["No bottleneck class passed its thresholds in this profile: nothing here stands out by the "
                 "numbers the puzzles use."]
    else:
        lines = [f"{len(findings)} bottleneck class(es) the profile supports, the most at stake first:", ""]
    for n, f in enumerate(findings, 1):
        lines.append(f"{n}. {f['bottleneck']}, at stake: {f['at_stake']}")
        for ev in f["evidence"]:
            lines += _wrapped(f"{ev['metric']} = {_number(ev['value'])}: {ev['why']}", width, "     ")
        lines += _wrapped(f"Look at: {f['where']}", width, "   ")
        if f["bottleneck"] in taught:
            lines += _wrapped(f"Taught by {taught[f['bottleneck']]}", width, "   ")
        lines.append("")
    for note in report.get("unclear", []):
        lines += _wrapped(f"Note: {note}", width, "")
    return "\n".join(lines).rstrip()


def _number(value: float) -> str:
    return f"{value:,.0f}" if abs(value) >= 1000 else f"{value:.3g}"


def _wrapped(text: str, width: int, indent: str) -> list[str]:
    return textwrap.wrap(text, width, initial_indent=indent, subsequent_indent=indent + "  ") or [indent]
