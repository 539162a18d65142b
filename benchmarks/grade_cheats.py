"""Grade each of a puzzle's cheats (cheats/NAME.py) as the learner's workload and print what it earned.

    python benchmarks/grade_cheats.py puzzle4 [puzzle5 ...] [--runs 3] [--json out.json]
    python benchmarks/grade_cheats.py puzzle4 --which reference alternatives/compiled_chunks   (any solution)
    python benchmarks/grade_cheats.py puzzle0 puzzle1 --solutions   (each puzzle's reference and alternatives)
    python benchmarks/grade_cheats.py puzzle9 puzzle10 --runs 3 --gpus 4 --stop-after 500 --json out.json

No profile is taken: a cheat's answer would name the right bottleneck anyway, so what matters is whether the
grade's other criteria refuse it. The tier printed is the one it earns with them (withheld when correctness, fair
play or the physical floor fails), as a right diagnosis would leave it. Each grade draws a fresh seed and starts
the graded file's compile caches empty; a puzzle's grades share one workspace, whose ruler keeps its builds (the
baseline's CUDA kernels compile once, not a minute each grade).

With --gpus N (a host of N GPUs), N grades run at once, each in its own process that sees one GPU alone
(CUDA_VISIBLE_DEVICES); --stop-after starts no grade after that many seconds, so a time-limited run keeps
every grade it finished.
"""

from __future__ import annotations

import argparse
import json
import os
import queue
import shutil
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

from grade_latency import timed
from grades_fixture import card_of
from grade_stability import grade_record, newest_grade_result
from tutor import actions
from tutor.catalog import get_puzzle
from tutor.runner import RunFailed
from tutor.workspace import scratch_workspace


def grade_one(ws, puzzle, path, which: str) -> dict:
    shutil.rmtree(ws.compile_cache("candidate"), ignore_errors=True)  # nothing the last graded file built
    shutil.copy(path, ws.editable_path(puzzle, "workload.py"))
    started = time.monotonic()  # each row keeps its grade's seconds: what a device call's plan needs
    try:
        stages, verdict = timed(lambda on_event: actions.grade(ws, puzzle, on_event))
    except RunFailed as failure:  # a crash, hang or OOM earns nothing: a row that says so
        return {"puzzle": puzzle.id, "which": which, "tier": "", "performance": [], "speedups": {},
                "refused_by": [f"run failed ({failure.kind}): {str(failure)[:400]}"],
                "wall_s": round(time.monotonic() - started, 1)}
    by_name = {c.name: c for c in verdict.criteria}
    refused = [f"{c.name}: {c.summary} {' | '.join(c.details[:4])}" for c in verdict.criteria
               if not c.passed and c.name != "diagnosis"]
    raw = newest_grade_result(ws)
    return {"puzzle": puzzle.id, "which": which, "tier": verdict.tier,
            "refused_by": refused, "performance": by_name["performance"].details[:4],
            "speedups": {k: round(v["median"], 3) for k, v in verdict.speedups.items()},
            "wall_s": round(time.monotonic() - started, 1),
            "card": card_of(raw),
            # The grade whole (each interval's bounds, the clocks, the card): what benchmarks/grades_fixture.py makes
            # a fixture row of.
            "grade": grade_record(puzzle, stages, verdict, raw)}


def print_row(row: dict) -> None:
    print(f"{row['which']} ({row['puzzle']}, grade {row['run']}): tier {row['tier'] or '-'}; speed-ups "
          f"{row['speedups']}; {row.get('wall_s', '?')} s", flush=True)
    for line in row["refused_by"]:
        print(f"    refused by {line[:400]}", flush=True)


def grades_wanted(args) -> list[tuple[str, str, int]]:
    """(puzzle, which, run) for every grade asked for, each solution's runs one after another."""
    wanted = []
    for puzzle_id in args.puzzles:
        puzzle = get_puzzle(puzzle_id)
        if args.solutions:
            chosen = ["reference", *(f"alternatives/{p.stem}" for p in sorted(puzzle.folder.glob("alternatives/*.py")))]
        else:
            chosen = args.which or [f"cheats/{p.stem}" for p in sorted(puzzle.folder.glob("cheats/*.py"))]
        wanted += [(puzzle_id, which, run + 1) for which in chosen for run in range(args.runs)]
    return wanted


def grade_in_process(puzzle_id: str, which: str, gpu: int) -> dict:
    """One grade in a fresh process that sees GPU `gpu` alone; its row, or why it has none."""
    with tempfile.NamedTemporaryFile(suffix=".json") as out:
        done = subprocess.run([sys.executable, __file__, puzzle_id, "--which", which, "--json", out.name],
                              env={**os.environ, "CUDA_VISIBLE_DEVICES": str(gpu)}, capture_output=True, text=True)
        rows = json.loads(Path(out.name).read_text() or "[]")
    if not rows:
        return {"puzzle": puzzle_id, "which": which, "tier": "", "speedups": {}, "performance": [],
                "refused_by": [f"no grade: exit {done.returncode}: {done.stderr[-600:]}"]}
    return rows[0]


def grade_on_gpus(wanted: list, gpus: int, stop_after_s: float | None, record) -> None:
    """Every grade of `wanted`, `gpus` at a time, one GPU each, every solution's first grade before any second;
    none started after `stop_after_s`."""
    jobs: queue.Queue = queue.Queue()
    for job in sorted(wanted, key=lambda job: job[2]):
        jobs.put(job)
    start, lock = time.monotonic(), threading.Lock()

    def work(gpu: int) -> None:
        while stop_after_s is None or time.monotonic() - start < stop_after_s:
            try:
                puzzle_id, which, run = jobs.get_nowait()
            except queue.Empty:
                return
            row = {**grade_in_process(puzzle_id, which, gpu), "run": run, "gpu": gpu}
            with lock:
                record(row)

    threads = [threading.Thread(target=work, args=(gpu,)) for gpu in range(gpus)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("puzzles", nargs="+")
    parser.add_argument("--runs", type=int, default=1)
    parser.add_argument("--json")
    parser.add_argument("--which", nargs="*", help="solutions to grade instead of the cheats: reference, alternatives/NAME")
    parser.add_argument("--solutions", action="store_true", help="grade each puzzle's reference and alternatives")
    parser.add_argument("--gpus", type=int, default=1, help="grades at once, one GPU of this host each")
    parser.add_argument("--stop-after", type=float, help="seconds after which no grade starts")
    args = parser.parse_args()
    if args.json:
        Path(args.json).parent.mkdir(parents=True, exist_ok=True)
    rows = []

    def record(row: dict) -> None:
        rows.append(row)
        print_row(row)
        if args.json:  # after every grade: a run stopped by a time limit keeps what it graded
            with open(args.json, "w") as f:
                json.dump(rows, f, indent=1)

    wanted = grades_wanted(args)
    if args.gpus > 1:
        grade_on_gpus(wanted, args.gpus, args.stop_after, record)
        return
    start, workspaces = time.monotonic(), {}
    for puzzle_id, which, run in wanted:
        if args.stop_after is not None and time.monotonic() - start > args.stop_after:
            break
        puzzle = get_puzzle(puzzle_id)
        if puzzle_id not in workspaces:
            workspaces[puzzle_id] = scratch_workspace("infprof-cheat-")
        ws = workspaces[puzzle_id]
        record({**grade_one(ws, puzzle, puzzle.solution_path(which), which), "run": run})


if __name__ == "__main__":
    main()
