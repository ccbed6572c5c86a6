#!/usr/bin/env bash
# Runs every test: C++ (GoogleTest under ctest) and Python (pytest). Fails on any failure.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/install_deps.sh
bash scripts/build.sh
echo "== ctest"
ctest --test-dir build/py --output-on-failure -j2
echo "== pytest"
python3 -m pytest -q tests/python
echo "== fuzz (bounded time; fixed and date-derived seeds; FUZZ-COUNTS lines)"
python3 -m pytest -q -s tests/fuzz
