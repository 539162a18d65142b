#!/usr/bin/env bash
# Grading benchmarks on a lent GPU machine in one call, with the GPU's clocks and the host's load
# logged beside them (to line up with each grade's start time). Logs go to $OUT.
#   bash benchmarks/device_grading.sh stability:puzzle1:8:60,240 baseline:puzzle1:2 latency:puzzle2:2 ...
#   (stability:PUZZLE:RUNS[:ROUNDS,...] grades the reference, baseline:PUZZLE:RUNS the untouched
#   baseline, alt:PUZZLE:RUNS:NAME the alternative alternatives/NAME, latency:PUZZLE:RUNS times the
#   reference's grade by stage (warm:PUZZLE:RUNS the same through a warm harness), hold:PUZZLE:W1,W2 runs
#   hold_effect.py on those workloads)
set -uo pipefail
OUT=${OUT:-/tmp/infprof-out}; mkdir -p "$OUT"
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl || exit 1
export PYTHONPATH=/tmp/site:$PWD PYTHONUNBUFFERED=1
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.mem,clocks.max.sm --format=csv
nvidia-smi --query-gpu=timestamp,clocks.sm,clocks.mem,power.draw,temperature.gpu,utilization.gpu \
  --format=csv,nounits -lms 250 > "$OUT/smi.csv" 2>&1 &
(while true; do echo "$(date +%s.%N) $(cut -d' ' -f1-3 /proc/loadavg) $(awk '/MHz/{s+=$4;n++}END{printf "%.0f", s/n}' /proc/cpuinfo)"; sleep 1; done) > "$OUT/host.log" &
for step in "$@"; do
  IFS=: read -r kind p runs rounds <<< "$step"
  echo "=== $step ($(date +%T))"
  case $kind in
    stability) python3 benchmarks/grade_stability.py "$p" --runs "$runs" ${rounds:+--rounds "$rounds"} \
                 --json "$OUT/${p}_stability.json" 2>&1 | grep -v "^▸" ;;
    baseline) python3 benchmarks/grade_stability.py "$p" --runs "$runs" --which baseline \
                --json "$OUT/${p}_baseline.json" 2>&1 | grep -v "^▸" ;;
    alt) python3 benchmarks/grade_stability.py "$p" --runs "$runs" --which "alternatives/$rounds" \
           --json "$OUT/${p}_${rounds}.json" 2>&1 | grep -v "^▸" ;;
    hold) python3 benchmarks/hold_effect.py "$p" ${runs//,/ } --json 2>&1 | tee -a "$OUT/hold_effect.jsonl" ;;
    latency) python3 benchmarks/grade_latency.py "$p" --runs "$runs" --json "$OUT/${p}_latency.json" 2>&1 ;;
    warm) python3 benchmarks/grade_latency.py "$p" --runs "$runs" --warm --json "$OUT/${p}_warm.json" 2>&1 ;;
  esac
done
kill %1 %2 2>/dev/null
ls -la "$OUT"
