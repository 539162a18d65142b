#!/usr/bin/env bash
# One device call for what has not yet run on the H100 (the 2026-11-25 sessions had no GPU time):
# the physical floor's probe, the memory profiler and its fixtures, the warm harness's GPU test and
# its latency, and dev check. Four calls (each step has a time limit, so each part fits in 10 minutes);
# everything lands in $OUT (copy $OUT/memory/ to tests/fixtures/memory/).
# Expects wheels in .whl/: torchao, gemlite, sqlite-utils and its deps, platformdirs, msgspec, nvtx, packaging.
#   bash benchmarks/device_unverified.sh 1, then 2, 3 and 4 (part 2 re-records puzzle2's memory alone); 1-4 ran
#   on 2026-11-25. Parts 5-9 are the drafts' (puzzle7, puzzle5, puzzle6, puzzle8, puzzle9), not yet run.
set -uo pipefail
OUT=${OUT:-/tmp/infprof-out}; mkdir -p "$OUT"
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl || exit 1
export PYTHONPATH=/tmp/site:$PWD PYTHONUNBUFFERED=1
step() {  # step NAME SECONDS COMMAND...: run it, log it, say how it ended
  local name=$1 limit=$2; shift 2
  local start=$SECONDS
  timeout "$limit" "$@" > "$OUT/$name.log" 2>&1
  echo "== $name: exit $? in $((SECONDS - start)) s"; tail -n 12 "$OUT/$name.log"
}
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.mem --format=csv | tee "$OUT/gpu.txt"
python3 -m tutor.cli warm --idle-min 20 > /tmp/warm.log 2>&1  # every grade below forks from it
case ${1:-1} in
  1) step doctor 60 python3 -m tutor.cli doctor
     step gpu_tests 240 python3 -m pytest -q -s -m gpu -p no:cacheprovider tests/test_floor.py \
       tests/test_memory_profiler.py tests/test_warm.py
     step memory_fixtures 240 python3 tests/fixtures/record_memory_snapshots.py "$OUT" ;;
  2) step memory_fixtures 150 python3 tests/fixtures/record_memory_snapshots.py "$OUT" puzzle2
     step dev_check_puzzle1 150 python3 -m tutor.cli dev check puzzle1
     step dev_check_puzzle3 150 python3 -m tutor.cli dev check puzzle3
     step latency 120 python3 benchmarks/grade_latency.py puzzle1 --warm --runs 3 --json "$OUT/latency_puzzle1.json" ;;
  3) step dev_check_puzzle3 540 python3 -m tutor.cli dev check puzzle3 ;;
  4) step dev_check_puzzle2 300 python3 -m tutor.cli dev check puzzle2
     step latency 250 python3 benchmarks/grade_latency.py puzzle3 puzzle2 --warm --runs 2 --json "$OUT/latency.json" ;;
  # The drafts: their GPU tests (puzzle7's pinned styles against the baseline, the host-link probe),
  # then each measured (5 grades a solution; then set its tiers as puzzle4's MEASUREMENTS.md did).
  5) step draft_gpu_tests 120 python3 -m pytest -q -s -m gpu -p no:cacheprovider tests/test_draft_puzzles.py \
       tests/test_floor.py
     step measure 420 python3 benchmarks/measure_draft.py puzzle7 "$OUT" 5 ;;
  6) step measure 540 python3 benchmarks/measure_draft.py puzzle5 "$OUT" 5 ;;
  7) step measure 540 python3 benchmarks/measure_draft.py puzzle6 "$OUT" 5 ;;
  8) step measure 540 python3 benchmarks/measure_draft.py puzzle8 "$OUT" 5 ;;
  9) step measure 540 python3 benchmarks/measure_draft.py puzzle9 "$OUT" 5 ;;  # its ncu recording: still by hand
esac
ls -la "$OUT" "$OUT/memory" 2>/dev/null
