#!/usr/bin/env bash
# Verify the GPU puzzles on a lent GPU machine in one call (see README: "Using a GPU machine").
# Expects wheels in .whl/ (benchmarks/device_wheels.sh fetches them); writes logs to $OUT.
#   bash benchmarks/device_verify.sh [puzzle ...]     (default: every CUDA puzzle)
set -uo pipefail
OUT=${OUT:-/tmp/infprof-out}; mkdir -p "$OUT"
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl || exit 1
export PYTHONPATH=/tmp/site:$PWD PYTHONUNBUFFERED=1
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.mem --format=csv | tee "$OUT/gpu.txt"
python3 -c "import torch, triton, torchao; print('torch', torch.__version__, 'triton', triton.__version__, 'torchao', torchao.__version__)" | tee -a "$OUT/gpu.txt"
puzzles=${*:-$(python3 -c "from tutor.catalog import all_puzzles; print(' '.join(p.id for p in all_puzzles().values() if p.hardware.device == 'cuda'))")}
python3 -m pytest -q -m gpu -p no:cacheprovider --continue-on-collection-errors -s tests 2>&1 | tee "$OUT/gpu_tests.log" | grep -E "passed|failed|PASS|FAIL|^puzzle|^bf16|Error" 
for p in $puzzles; do
  python3 benchmarks/grade_stability.py "$p" --runs 5 --which reference --json "$OUT/${p}_reference.json" 2>&1 | tee "$OUT/${p}_stability.log" | grep -v "^▸"
  python3 benchmarks/grade_stability.py "$p" --runs 2 --which baseline --json "$OUT/${p}_baseline.json" 2>&1 | tee "$OUT/${p}_baseline.log" | grep -v "^▸"
done
# Keep the newest baseline trace of each puzzle (a fixture for CPU tests of trace analysis).
for p in $puzzles; do
  run=$(ls -dt /tmp/infprof-stability-*/ws/.infprof/runs/*-"$p"-profile-baseline-* 2>/dev/null | head -1)
  [ -n "$run" ] && gzip -c "$run/trace.json" > "$OUT/${p}_baseline_trace.json.gz" && cp "$run/metrics.json" "$OUT/${p}_baseline_metrics.json"
done
ls -la "$OUT"
