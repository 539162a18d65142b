"""puzzle3: fp8 weights, a true account of GemLite's choice, and Nsight Compute evidence for a better one.

The harness asks the puzzle's spec for `facts` after timing: the matmul type GemLite
dispatched to at M=128, the config triton ran and whether it came from GemLite's
shipped table or from autotuning, read from GemLite's own caches in this very run,
on this GPU. answer.toml's [autotune] table must report the same.

Its [kernel_evidence] table (tutor.grading.kernel_evidence, as puzzle.toml asks) explains why the
learner's kernel beats GemLite's: one Nsight Compute metric, with its value in the learner's own
ncu profile of the baseline (GemLite's kernel) and of their current workload, that tells the two apart.
"""

from __future__ import annotations

import tomllib

from graders import puzzle1
from tutor.catalog import Puzzle
from tutor.grading.verdict import Criterion

NAME = "autotune report"  # the criterion's name, as verdicts and benchmarks/grades_fixture.py know it
REPORTED = {"block_size_m": "BLOCK_SIZE_M", "block_size_n": "BLOCK_SIZE_N", "block_size_k": "BLOCK_SIZE_K"}


def criteria(puzzle: Puzzle, result: dict, answer_path=None, profiles=None) -> list[Criterion]:
    try:
        answer = tomllib.loads(answer_path.read_text()) if answer_path else {}
    except (OSError, tomllib.TOMLDecodeError) as e:
        unreadable = Criterion(NAME, False, f"answer.toml could not be read: {e}", [])
        return [*puzzle1.criteria(puzzle, result, answer_path), unreadable]
    return [*puzzle1.criteria(puzzle, result, answer_path), autotune_report(result.get("facts"), answer.get("autotune", {}))]


def autotune_report(facts: dict | None, reported: dict) -> Criterion:
    if not facts or not facts.get("config"):
        return Criterion(NAME, False, "The run reported no GemLite choice to check against.",
                         ["Grade on a CUDA GPU with gemlite installed and the current tutor version."])
    truth = answer_from_facts(facts)["autotune"]
    details, wrong = [], []
    for key, actual in truth.items():
        said = reported.get(key)
        ok = said == actual
        details.append(f"{key}: you said {said!r}, GemLite ran {actual!r}" + ("" if ok else "  ✗"))
        if not ok:
            wrong.append(key)
    details.append(f"config key GemLite looked up: {facts.get('config_key')}")
    if not wrong:
        return Criterion(NAME, True, "Your account of GemLite's choice matches its cache.", details)
    return Criterion(NAME, False, f"{len(wrong)} of {len(truth)} [autotune] entries differ from what GemLite ran.",
                     details)


def answer_from_facts(facts: dict) -> dict:
    """The true [autotune] table for a run's facts (what a failed report's details show the learner)."""
    return {"autotune": {"matmul_type": facts["matmul_type"], "source": facts.get("source"),
                         **{k: facts["config"].get(v) for k, v in REPORTED.items()}}}
