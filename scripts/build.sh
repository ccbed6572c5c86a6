#!/usr/bin/env bash
# One CMake build (build/py) serves the editable Python install, the C++ tests and the examples.
set -euo pipefail
cd "$(dirname "$0")/.."
# ccache keys on paths relative to the checkout, so a fresh clone reuses earlier builds' objects.
export CCACHE_BASEDIR="$PWD" CCACHE_NOHASHDIR=1
export PIP_ROOT_USER_ACTION=ignore
python3 -m pip install -q --no-build-isolation -e . -Cbuild-dir=build/py \
  -Ccmake.define.EMBER_BUILD_TESTS=ON -Ccmake.args=-GNinja
python3 -c "import ember" || { echo "ember failed to build or import" >&2; exit 1; }
