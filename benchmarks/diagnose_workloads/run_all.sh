#!/usr/bin/env bash
# `infprof-tutor diagnose` on workloads nobody tuned for it, on a lent GPU: each report into $OUT.
#   bash benchmarks/diagnose_workloads/run_all.sh [--kernels]
set -uo pipefail
OUT=${OUT:-/tmp/infprof-out}; mkdir -p "$OUT"
WS=$(mktemp -d)/ws; python3 -m tutor.cli init "$WS" > /dev/null
for w in decode_loop compiled_mlp eager_inference; do
  echo "=== $w"
  (cd "$WS" && python3 -m tutor.cli diagnose "$@" -- python3 "$OLDPWD/benchmarks/diagnose_workloads/$w.py") \
    2>&1 | tee "$OUT/diagnose_$w.txt"
done
