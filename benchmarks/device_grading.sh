#!/usr/bin/env bash
# Grading benchmarks on a lent GPU machine in one call, with the GPU's clocks and the host's load
# logged beside them (to line up with each grade's start time). Logs go to $OUT.
#   bash benchmarks/device_grading.sh stability:puzzle1:8:60,240 baseline:puzzle1:2 latency:puzzle2:2 ...
#   (stability:PUZZLE:RUNS[:ROUNDS,...] grades the reference, baseline:PUZZLE:RUNS the untouched
#   baseline, alt:PUZZLE:RUNS:NAME the alternative alternatives/NAME, loops:PUZZLE:RUNS:2-4,4-8[:NAME] the reference
#   (or alternatives/NAME) with the grades alternating between those calls a round (grade_stability.py
#   --loop-calls), latency:PUZZLE:RUNS times the
#   reference's grade by stage (warm:PUZZLE:RUNS the same through a warm harness, watch:PUZZLE:RUNS that and
#   each quick check again as a watch session's, its ruler kept), hold:PUZZLE:W1,W2 runs
#   hold_effect.py on those workloads, calls:PUZZLE splits a grade's timed calls of the reference into their pieces
#   on each side (profile_harness.py --calls, kept in $OUT/PUZZLE_calls.txt), cheats:PUZZLE:RUNS grades the
#   puzzle's cheats, solutions:P1,P2...:RUNS
#   each listed puzzle's reference and alternatives (one JSON, written after each grade), record:PUZZLE profiles its
#   baseline as study mode ships it (measure_draft.py --recordings-only, into $OUT/PUZZLE: then
#   install_recordings.py), gpu-tests:FILE,FILE... runs those files' GPU tests, everything they print kept in
#   $OUT/gpu_tests.txt)
# A device call has a time limit: with STOP_AFTER=S no step starts once S seconds have passed, and each is stopped
# at S + 60, so the call returns what the steps before it wrote (a step's JSON is written when all its grades end:
# steps of one grade each lose the least). A draft puzzle needs INFPROF_DRAFTS=1.
set -uo pipefail
OUT=${OUT:-/tmp/infprof-out}; mkdir -p "$OUT"
START=$SECONDS STOP_AFTER=${STOP_AFTER:-100000}
# A step's JSON file: $OUT/NAME.json, or again2/NAME.json, again3/... where an earlier step wrote that name
# (benchmarks/grades_fixture.py reads the workload from the file's name).
out() { local f="$OUT/$1.json" n=2; while [ -e "$f" ]; do f="$OUT/again$n/$1.json"; n=$((n + 1)); done
        mkdir -p "$(dirname "$f")"; echo "$f"; }
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl || exit 1
export PYTHONPATH=/tmp/site:$PWD PYTHONUNBUFFERED=1
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.mem,clocks.max.sm --format=csv
nvidia-smi --query-gpu=timestamp,clocks.sm,clocks.mem,power.draw,temperature.gpu,utilization.gpu \
  --format=csv,nounits -lms 250 > "$OUT/smi.csv" 2>&1 &
(while true; do echo "$(date +%s.%N) $(cut -d' ' -f1-3 /proc/loadavg) $(awk '/MHz/{s+=$4;n++}END{printf "%.0f", s/n}' /proc/cpuinfo)"; sleep 1; done) > "$OUT/host.log" &
timeout() { command timeout $((left + 60)) "$@"; }  # a step stopped a minute past STOP_AFTER (its `left`)
for step in "$@"; do
  IFS=: read -r kind p runs rounds name <<< "$step"
  left=$((STOP_AFTER - (SECONDS - START)))
  if ((left <= 0)); then echo "=== $step not started: STOP_AFTER=$STOP_AFTER s have passed"; continue; fi
  echo "=== $step ($(date +%T), $((SECONDS - START)) s in)"
  case $kind in
    stability) timeout python3 benchmarks/grade_stability.py "$p" --runs "$runs" ${rounds:+--rounds "$rounds"} \
                 --json "$(out "${p}_stability")" 2>&1 | grep -v "^▸" ;;
    baseline) timeout python3 benchmarks/grade_stability.py "$p" --runs "$runs" --which baseline \
                --json "$(out "${p}_baseline")" 2>&1 | grep -v "^▸" ;;
    loops) timeout python3 benchmarks/grade_stability.py "$p" --runs "$runs" --loop-calls "$rounds" \
             ${name:+--which "alternatives/$name"} --json "$(out "${p}_${name:+alternatives_${name}_}loops")" 2>&1 \
             | grep -v "^▸" ;;
    alt) timeout python3 benchmarks/grade_stability.py "$p" --runs "$runs" --which "alternatives/$rounds" \
           --json "$(out "${p}_alternatives_${rounds}")" 2>&1 | grep -v "^▸" ;;
    hold) timeout python3 benchmarks/hold_effect.py "$p" ${runs//,/ } --json 2>&1 | tee -a "$OUT/hold_effect.jsonl" ;;
    calls) timeout python3 benchmarks/profile_harness.py "$p" --calls 2>&1 | tee "$OUT/${p}_calls.txt" | tail -45 ;;
    latency) timeout python3 benchmarks/grade_latency.py "$p" --runs "$runs" --json "$(out "${p}_latency")" 2>&1 ;;
    cheats) timeout python3 benchmarks/grade_cheats.py "$p" --runs "$runs" --stop-after "$left" \
              --json "$(out "${p}_cheats")" 2>&1 | grep -v "^▸" ;;
    solutions) timeout python3 benchmarks/grade_cheats.py ${p//,/ } --solutions --runs "$runs" --stop-after "$left" \
                 --json "$(out "solutions_${p//,/_}")" 2>&1 | grep -v "^▸" ;;
    warm) timeout python3 benchmarks/grade_latency.py "$p" --runs "$runs" --warm --json "$(out "${p}_warm")" 2>&1 ;;
    watch) timeout python3 benchmarks/grade_latency.py "$p" --runs "$runs" --warm --watch \
             --json "$(out "${p}_watch")" 2>&1 ;;
    record) timeout python3 benchmarks/measure_draft.py "$p" "$OUT/$p" --recordings-only 2>&1 ;;
    # Without pytest's log capture: torch's DEBUG records filled -rP's report, and a tail of it lost the prints.
    gpu-tests) timeout python3 -m pytest -q -p no:cacheprovider -p no:logging -m gpu -rP ${p//,/ } 2>&1 \
                 | tee -a "$OUT/gpu_tests.txt" | tail -5 ;;
  esac
done
kill %1 %2 2>/dev/null
ls -laR "$OUT"
