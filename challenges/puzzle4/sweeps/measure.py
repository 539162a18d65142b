"""Measure puzzle4 on the H100 before it ships (it is a draft until then): the reference and each
alternative graded 10 times, the baseline twice (its profile becomes the recording).

    INFPROF_DRAFTS=1 PYTHONPATH=/tmp/site:$PWD python3 challenges/puzzle4/sweeps/measure.py $OUT

Each grade_stability run prints the speed-ups against the baseline a call; set the tiers in
puzzle.toml between the classes they show, with every honest style clear of its bar, then copy the
baseline's metrics.json and trace.json.gz into recordings/ and remove `draft`.
"""

import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[3]


def main(out: Path) -> None:
    out.mkdir(parents=True, exist_ok=True)
    env = {**os.environ, "INFPROF_DRAFTS": "1"}
    for which, runs in (("baseline", 2), ("reference", 10), ("alternatives/check_every_chunk", 10),
                        ("alternatives/compiled_chunks", 10)):
        name = which.replace("/", "_")
        subprocess.run([sys.executable, "benchmarks/grade_stability.py", "puzzle4", "--runs", str(runs), "--which",
                        which, "--json", str(out / f"puzzle4_{name}.json")], cwd=ROOT, env=env, check=False)


if __name__ == "__main__":
    main(Path(sys.argv[1]))
