#!/usr/bin/env bash
# puzzle2 on a lent GPU machine in one call: memory of every workload, reference and baseline graded,
# and the baseline's trace and memory kept as fixtures for the CPU tests. Logs go to $OUT.
set -uo pipefail
OUT=${OUT:-/tmp/infprof-out}; mkdir -p "$OUT"
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl || exit 1
export PYTHONPATH=/tmp/site:$PWD PYTHONUNBUFFERED=1
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.mem --format=csv
[ "${MEMORY:-1}" = 1 ] && python3 benchmarks/memory_run.py puzzle2 --json "$OUT/h100_puzzle2_memory.json" 2>&1
python3 benchmarks/grade_stability.py puzzle2 --runs 5 --which reference --json "$OUT/puzzle2_reference.json" 2>&1 | tee "$OUT/puzzle2_stability.log" | grep -v "^▸"
python3 benchmarks/grade_stability.py puzzle2 --runs 2 --which baseline --json "$OUT/puzzle2_baseline.json" 2>&1 | tee "$OUT/puzzle2_baseline.log" | grep -v "^▸"
run=$(ls -dt /tmp/infprof-stability-*/ws/.infprof/runs/*-puzzle2-profile-baseline-* 2>/dev/null | head -1)
[ -n "$run" ] && gzip -c "$run/trace.json" > "$OUT/h100_puzzle2_baseline_trace.json.gz" && cp "$run/metrics.json" "$OUT/h100_puzzle2_baseline_metrics.json"
ls -la "$OUT"
