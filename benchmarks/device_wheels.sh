#!/usr/bin/env bash
# The wheels a lent GPU machine lacks (it reaches no package registry), fetched here into .whl/ for the device
# scripts (device_*.sh), which install them with pip --no-index: the tutor's own needs beside the machine's
# torch 2.11 and triton 3.6, for its Python 3.12. gemlite ships only a source archive, so it is built here.
#   bash benchmarks/device_wheels.sh        (from the repository's root; .whl/ is ignored: .git/info/exclude)
set -euo pipefail
grep -qx "/.whl/" .git/info/exclude 2>/dev/null || echo "/.whl/" >> .git/info/exclude
PLATFORMS=(--platform manylinux_2_17_x86_64 --platform manylinux2014_x86_64 --platform manylinux_2_24_x86_64
           --platform manylinux_2_28_x86_64 --platform manylinux_2_31_x86_64 --platform manylinux_2_34_x86_64)
python3 -m pip download -q --no-deps --only-binary=:all: --python-version 3.12 --implementation cp "${PLATFORMS[@]}" \
  -d .whl torchao==0.17.0 sqlite-utils sqlite-fts4 click click-default-group platformdirs msgspec nvtx watchfiles \
  textual textual-plotext plotext mdit-py-plugins linkify-it-py uc-micro-py
src=$(mktemp -d)
python3 -m pip download -q --no-deps --no-binary=:all: -d "$src" gemlite
python3 -m pip wheel -q --no-deps -w .whl "$src"/gemlite-*.tar.gz
rm -rf "$src"
ls .whl && du -sh .whl
