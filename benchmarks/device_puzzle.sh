#!/usr/bin/env bash
# One puzzle on a lent GPU machine in one call: its reference graded 5 times and its baseline twice,
# and the baseline's own profile kept as a fixture for the CPU tests. Logs go to $OUT.
#   bash benchmarks/device_puzzle.sh puzzle2 [--memory]   (--memory: also each workload's memory run)
set -uo pipefail
p=$1
OUT=${OUT:-/tmp/infprof-out}; mkdir -p "$OUT"
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl || exit 1
export PYTHONPATH=/tmp/site:$PWD PYTHONUNBUFFERED=1
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.mem --format=csv
[ "${2:-}" = --memory ] && python3 benchmarks/memory_run.py "$p" --json "$OUT/${p}_memory.json" 2>&1
python3 benchmarks/grade_stability.py "$p" --runs 5 --which reference --json "$OUT/${p}_reference.json" 2>&1 | tee "$OUT/${p}_stability.log" | grep -v "^▸"
python3 benchmarks/grade_stability.py "$p" --runs 2 --which baseline --json "$OUT/${p}_baseline.json" 2>&1 | tee "$OUT/${p}_baseline.log" | grep -v "^▸"
run=$(ls -dt /tmp/infprof-stability-*/ws/.infprof/runs/*-"$p"-profile-baseline-* 2>/dev/null | head -1)
[ -n "$run" ] && gzip -c "$run/trace.json" > "$OUT/${p}_baseline_trace.json.gz" && cp "$run/metrics.json" "$OUT/${p}_baseline_metrics.json"
ls -la "$OUT"
