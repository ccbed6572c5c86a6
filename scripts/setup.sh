#!/usr/bin/env bash
# Installs what a fresh Debian 12 machine lacks, builds ember (C++ core, Python extension, C++
# examples) and runs the main demo. Safe to re-run: it only installs what is missing.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/install_deps.sh
bash scripts/build.sh
echo "== C++ example"
./build/py/example_eager_basics
echo "== demo: fitting a model by hand-written gradient descent"
python3 examples/python/fit_linear_regression.py
