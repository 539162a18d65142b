#!/usr/bin/env bash
# Each solution of a puzzle graded once cold (INFPROF_WARM=0) and once forked from a warm harness (tutor.warm),
# into $OUT/cold_PUZZLE_WHICH.json and $OUT/warm_PUZZLE_WHICH.json, as benchmarks/grades_fixture.py reads them
# (issue 17: a grade must read the same tier both ways). On a GPU machine, wheels in .whl/ (device_wheels.sh):
#   bash benchmarks/warm_cold.sh PUZZLE [SECONDS A GRADE]
set -uo pipefail
pid=$1 limit=${2:-150}
OUT=${OUT:-/tmp/infprof-out}; mkdir -p "$OUT"
python3 -m tutor.cli warm --idle-min 20 > "$OUT/warm_harness_$pid.log" 2>&1  # the warm grades fork from it
for which in reference $(cd "challenges/$pid/alternatives" && ls -- *.py | sed 's/\.py$//; s/^/alternatives\//'); do
  for harness in cold warm; do
    name="${harness}_${pid}_${which//\//_}"
    ( [ "$harness" = cold ] && export INFPROF_WARM=0
      timeout "$limit" python3 benchmarks/grade_stability.py "$pid" --runs 1 --which "$which" \
        --workspace "/tmp/ws_$pid" --json "$OUT/$name.json" > "$OUT/$name.log" 2>&1
      echo "== $name: exit $?"; tail -n 4 "$OUT/$name.log" )
  done
done
