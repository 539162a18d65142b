"""puzzle3: the weights stay in fp8, and the learner's account of GemLite's choice matches what it did.

The harness asks the puzzle's spec for `facts` after timing: the matmul type GemLite
dispatched to at M=128 and the config triton ran, read from GemLite's own caches in
this very run, on this GPU. answer.toml's [autotune] table must report the same.
"""

from __future__ import annotations

import tomllib

from graders import puzzle1
from tutor.catalog import Puzzle
from tutor.grading.verdict import Criterion

REPORTED = {"block_size_m": "BLOCK_SIZE_M", "block_size_n": "BLOCK_SIZE_N", "block_size_k": "BLOCK_SIZE_K"}


def criteria(puzzle: Puzzle, result: dict, answer_path=None) -> list[Criterion]:
    return [*puzzle1.criteria(puzzle, result, answer_path), autotune_report(result.get("facts"), answer_path)]


def autotune_report(facts: dict | None, answer_path) -> Criterion:
    name = "autotune report"
    if not facts or not facts.get("config"):
        return Criterion(name, False, "The run reported no GemLite choice to check against.",
                         ["Grade on a CUDA GPU with gemlite installed and the current tutor version."])
    try:
        reported = tomllib.loads(answer_path.read_text()).get("autotune", {}) if answer_path else {}
    except (OSError, tomllib.TOMLDecodeError) as e:
        return Criterion(name, False, f"answer.toml could not be read: {e}", [])
    truth = {"matmul_type": facts["matmul_type"], **{k: facts["config"].get(v) for k, v in REPORTED.items()}}
    details, wrong = [], []
    for key, actual in truth.items():
        said = reported.get(key)
        ok = said == actual
        details.append(f"{key}: you said {said!r}, GemLite ran {actual!r}" + ("" if ok else "  ✗"))
        if not ok:
            wrong.append(key)
    details.append(f"config key GemLite looked up: {facts.get('config_key')}")
    if not wrong:
        return Criterion(name, True, "Your account of GemLite's choice matches its cache.", details)
    return Criterion(name, False, f"{len(wrong)} of {len(truth)} [autotune] entries differ from what GemLite ran.",
                     details)
