"""A puzzle's grades on a GPU as a test fixture: grade_stability.py's JSON files (one per solution, as
measure_draft.py writes them) reduced to what tests/test_grading_rules.py reads under today's bars.

    python benchmarks/grades_fixture.py PUZZLE CALL FILE... > tests/fixtures/grades_PUZZLE_DATE.json
      (FILE: grade_stability.py's JSON, or grade_cheats.py --solutions's, whose rows name their puzzle)
    python benchmarks/grades_fixture.py PUZZLE --table FILE...   # MEASUREMENTS.md's table rows instead (either FILE)
    python benchmarks/grades_fixture.py PUZZLE --busy CALL FILE...  # a serving grade's NVML figures, each grade

CALL names the device call the grades came from (MEASUREMENTS.md says which). A file's name says which
solution it graded (PUZZLE_reference.json, PUZZLE_alternatives_NAME.json; device_grading.sh writes a file a
step, NAME.json, again2/NAME.json, ...: a workload's grades are numbered across its files); the baseline's own
grades are left out (no tier is expected of it), and so are cheats' (cheats/NAME: no tier either). Each row says
whether its grade forked from a warm harness or started cold (its `importing` stage: torch's import). --busy keeps
every grade's NVML figures, the cheats' and the baseline's too (tests/test_serving_floor.py reads them).
--table prints a Markdown row per workload (its files together), the baseline's too: grades, the baseline's and
its own median ms per grade, the speed-up's median and the lower bound of its interval per grade (on the clock of
the puzzle's last tier), and the tiers the grades read then.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

from graders import puzzle3
from tutor.grading import kernel_evidence

VERDICT_CRITERIA = {"correctness", "diagnosis", "performance"}
# What the learner's answer and own profiles must show (puzzle3's autotune report, a kernel explained with Nsight
# Compute): a solution graded without them (grade_cheats.py --solutions) fails them, which says nothing of its code.
ANSWER_CRITERIA = {puzzle3.NAME, kernel_evidence.NAME}
SERVING_FIGURES = ("tokens_per_s", "latency_p99_s")  # what a serving tier reads of each replay
WARM_IMPORT_S = 0.5  # torch's import: 1.4-1.9 s in a cold grade on the H100, 0.01-0.02 s forked from a warm harness


def which_of(path: Path, puzzle: str) -> str:
    # benchmarks/warm_cold.sh names its files cold_PUZZLE_... and warm_PUZZLE_...
    name = path.stem.removeprefix("cold_").removeprefix("warm_").removeprefix(f"{puzzle}_")
    for folder in ("alternatives", "cheats"):
        if name.startswith(f"{folder}_"):
            return f"{folder}/" + name.removeprefix(f"{folder}_")
    return name


def card_of(grade: dict) -> str:
    """The GPU a grade ran on, as nvidia-smi named it (the fixture's file name names none)."""
    return grade.get("environment", {}).get("before", {}).get("name", "")


def rounded(speedups: dict) -> dict:
    return {clock: {vs: {k: round(v, 4) if isinstance(v, float) else v for k, v in e.items()} for vs, e in by_vs.items()}
            for clock, by_vs in speedups.items()}


def graded_by_workload(puzzle: str, path: Path) -> dict[str, list[dict]]:
    """A file's grades of `puzzle`, by workload: grade_stability.py's (the file's name says which) or grade_cheats.py
    --solutions's (many solutions a file, each row naming its own, its grade whole under "grade")."""
    graded = json.loads(path.read_text())
    if not (graded and "puzzle" in graded[0]):
        return {which_of(path, puzzle): graded}
    found: dict[str, list[dict]] = {}
    for r in graded:
        if r["puzzle"] == puzzle and "grade" in r:
            found.setdefault(r["which"], []).append({**r["grade"], "run": r["run"]})
    return found


def rows(puzzle: str, call: str, path: Path) -> list[dict]:
    return [row for which, grades in graded_by_workload(puzzle, path).items()
            for row in grade_rows(puzzle, which, call, grades)]


def grade_rows(puzzle: str, which: str, call: str, grades: list[dict]) -> list[dict]:
    if which == "baseline" or which.startswith("cheats/"):
        return []
    return [{"puzzle": puzzle, "which": which, "call": call, "card": card_of(g), "run": g["run"], "rounds": g["rounds"],
             "tier_then": g["tier"], "speedups": rounded(g["speedups"]),
             # A grader's own rules (puzzle1's fp8 weights): the speed-ups alone do not earn a tier without them.
             "rules_passed": all(ok for name, ok in g["criteria"].items()
                                 if name not in VERDICT_CRITERIA | ANSWER_CRITERIA),
             "mine_gpu_clock": g["clocks"].get("mine", {}).get("method", ""),
             # Forked from a warm harness, torch already imported (tutor.warm), or started cold.
             "harness": "warm" if g["stages"].get("importing", WARM_IMPORT_S) < WARM_IMPORT_S else "cold",
             # A serving grade's tier is its replay pairs' (tutor.grading.serving): kept, to be re-read.
             **({"serving_pairs": [[{k: round(side[k], 4) for k in SERVING_FIGURES} for side in pair]
                                   for pair in g["serving_pairs"]]} if g.get("serving_pairs") else {})}
            for g in grades]


def busy_rows(puzzle: str, call: str, path: Path) -> list[dict]:
    return [{"puzzle": puzzle, "which": which_of(path, puzzle), "call": call, "run": g["run"], "tier_then": g["tier"],
             "criteria": g["criteria"], "gpu_busy": g["gpu_busy"]} for g in json.loads(path.read_text())]


def span(values: list[float], fmt: str) -> str:
    return f"{fmt.format(min(values))}-{fmt.format(max(values))}"


def comparators(puzzle: str) -> list:
    """The tiers' comparators in their order, each with the clock of its last tier: (vs, clock)."""
    from tutor.catalog import get_puzzle

    return list({t.vs: t.clock for t in get_puzzle(puzzle, drafts=True).tiers}.items())


def table_row(puzzle: str, which: str, grades: list[dict]) -> str:
    """One workload's row over its grades in every file given (device_grading.sh writes one a step)."""
    if any(g.get("serving_pairs") for g in grades):
        return serving_row(which, grades)
    against = comparators(puzzle)
    cells = ["", which, str(len(grades))]
    cells += [span([g["timings_ms"][vs] for g in grades], "{:.2f}") for vs, _ in against]
    cells.append(span([g["timings_ms"]["mine"] for g in grades], "{:.2f}"))
    for vs, clock in against:
        estimates = [g["speedups"][clock][vs] for g in grades]
        cells += [span([e["median"] for e in estimates], "{:.2f}") + "x", span([e["low"] for e in estimates], "{:.2f}")]
    return " | ".join([*cells, ", ".join(sorted({g["tier"] or "none" for g in grades})), ""]).strip()


def serving_row(which: str, grades: list[dict]) -> str:
    """A serving grade's row: tokens a second of each side over its replays, the throughput speed-up and the
    p99 latency ratio's upper bound (tutor.grading.serving), the tiers read then."""
    from tutor.grading.serving import serving_estimates

    pairs = [pair for g in grades for pair in g["serving_pairs"]]
    estimates = [serving_estimates([tuple(pair) for pair in g["serving_pairs"]]) for g in grades]
    return " | ".join(["", which, str(len(grades)),
                       span([b["tokens_per_s"] for b, _ in pairs], "{:.0f}"),
                       span([m["tokens_per_s"] for _, m in pairs], "{:.0f}"),
                       span([e["throughput"].median for e in estimates], "{:.2f}") + "x",
                       span([e["throughput"].low for e in estimates], "{:.2f}"),
                       span([e["latency_p99"].high for e in estimates], "{:.2f}"),
                       ", ".join(sorted({g["tier"] or "none" for g in grades})), ""]).strip()


def columns(puzzle: str) -> list[str]:
    """Each comparator's ms, then the speed-up over each and its lower bound (the clock of its last tier)."""
    vs = comparators(puzzle)
    if len(vs) == 1:  # the tables of the puzzles measured against one comparator, as they were printed
        return ["workload", "grades", f"{vs[0][0]} ms", "its ms", "speed-up (median)", "lower bound", "tier then"]
    return ["workload", "grades", *(f"{name} ms" for name, _ in vs), "its ms",
            *(c for name, _ in vs for c in (f"vs {name} (median)", "lower bound")), "tier then"]


SERVING_COLUMNS = ("workload", "grades", "baseline tokens/s", "its tokens/s", "throughput (median)", "lower bound",
                   "p99 ratio (high)", "tier then")


def main(puzzle: str, call: str, paths: list[str]) -> None:
    if call == "--table":
        by_workload: dict[str, list[dict]] = {}
        for p in map(Path, paths):
            for which, grades in graded_by_workload(puzzle, p).items():
                by_workload.setdefault(which, []).extend(grades)
        serving = any(g.get("serving_pairs") for grades in by_workload.values() for g in grades)
        header = SERVING_COLUMNS if serving else columns(puzzle)
        print("| " + " | ".join(header) + " |")
        print("|" + "---|" * len(header))
        print("\n".join(table_row(puzzle, which, grades) for which, grades in by_workload.items()))
        return
    if call == "--busy":
        call, paths = paths[0], paths[1:]
        found = [row for p in paths for row in busy_rows(puzzle, call, Path(p))]
    else:
        found = [row for p in paths for row in rows(puzzle, call, Path(p))]
    runs: dict[str, int] = {}
    for row in found:  # numbered a workload at a time across its files, in the order given
        row["run"] = runs[row["which"]] = runs.get(row["which"], 0) + 1
    print("[\n" + ",\n".join(json.dumps(r) for r in found) + "\n]")


if __name__ == "__main__":
    if len(sys.argv) < 4 or sys.argv[1] in ("-h", "--help"):  # its usage, the docstring's first paragraph
        print(__doc__.split("\n\n")[1])
        sys.exit(0 if sys.argv[1:2] in (["-h"], ["--help"]) else 2)
    main(sys.argv[1], sys.argv[2], sys.argv[3:])
