#!/usr/bin/env bash
# Runs every test: C++ (GoogleTest under ctest), Python (pytest, with TensorFlow installed for the
# differential tests), the fuzzers' bounded runs (tests/fuzz) and the sanitizer runs (scripts/sanitize.sh).
# Fails on any failure.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/install_deps.sh --test
bash scripts/build.sh
echo "== ctest"
ctest --test-dir build/py --output-on-failure -j2
echo "== pytest"
python3 -m pytest -q tests/python
bash scripts/sanitize.sh
echo "== fuzzers (fixed seed + today's seed; the libFuzzer targets from build/fuzz)"
python3 -m pytest -q -s tests/fuzz
