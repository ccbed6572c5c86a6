#!/usr/bin/env bash
# Installs what a fresh Debian 12 machine lacks, builds ember (C++ core, Python extension, C++
# examples) and runs the main demo. Safe to re-run: it only installs what is missing.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/install_deps.sh
bash scripts/build.sh
echo "== C++ example"
./build/py/example_eager_basics
echo "== demo: train eagerly and as an ember.function, checkpoint, export a SavedModel, serve it from C++"
python3 examples/python/train_and_serve.py --serve-binary build/py/example_serve_saved_model
