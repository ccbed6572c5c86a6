#!/usr/bin/env bash
# The sanitizer runs of the test command (issue 12). build/fuzz is the clang build with AddressSanitizer +
# UndefinedBehaviorSanitizer (and libFuzzer coverage): it runs every C++ test here, and tests/fuzz runs its
# libFuzzer targets from the same build. build/tsan is a ThreadSanitizer build for the multi-threaded C++
# tests. Neither builds the Python extension (it would need a sanitizer runtime preloaded into Python).
set -euo pipefail
cd "$(dirname "$0")/.."
# ccache keys on paths relative to the checkout, so a fresh clone reuses earlier builds' objects.
export CCACHE_BASEDIR="$PWD" CCACHE_NOHASHDIR=1

echo "== ASan + UBSan (clang, build/fuzz): ctest and the fuzz targets"
cmake -S . -B build/fuzz -GNinja -DCMAKE_BUILD_TYPE=Release -DCMAKE_CXX_COMPILER=clang++ \
  -DEMBER_BUILD_FUZZERS=ON -DEMBER_BUILD_PYTHON=OFF -DEMBER_BUILD_EXAMPLES=OFF -DEMBER_BUILD_TESTS=ON >/dev/null
ninja -C build/fuzz ember_cpp_tests graph_def_fuzzer checkpoint_fuzzer
# Resident-memory checks (ResourceLifetime) measure nothing under ASan's quarantine and shadow memory;
# they run in the plain build.
ASAN_OPTIONS=detect_leaks=1:strict_string_checks=1 UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1 \
  ctest --test-dir build/fuzz -j2 --output-on-failure -E 'ResourceLifetime\.'

echo "== TSan (build/tsan): the multi-threaded tests"
cmake -S . -B build/tsan -GNinja -DCMAKE_BUILD_TYPE=Release -DEMBER_BUILD_TESTS=ON -DEMBER_BUILD_EXAMPLES=OFF \
  -DEMBER_SANITIZE=thread >/dev/null
ninja -C build/tsan ember_cpp_tests
# OpenMP's runtime is not instrumented, so its own synchronisation would be reported: the tests run with
# one OpenMP thread and check ember's std::thread concurrency (shared functions, plans, variables, tapes,
# the profiler). Executor.ConcurrentCallsOfOneFunction is left to the plain build: its plan runs on an
# OpenMP team (inter-op parallelism), whose hand-offs TSan cannot see.
TSAN_OPTIONS=halt_on_error=1:second_deadlock_stack=1 OMP_NUM_THREADS=1 \
  ./build/tsan/ember_cpp_tests \
  --gtest_filter='*Concurrent*:*Concurrency*:CppVariable.*:-Executor.ConcurrentCallsOfOneFunction'
