#!/usr/bin/env bash
# The sanitizer runs of the test command (issue 12): every C++ test under AddressSanitizer +
# UndefinedBehaviorSanitizer, and the multi-threaded C++ tests under ThreadSanitizer. Each has its own
# build directory (reused by ccache); the Python extension is not built there.
set -euo pipefail
cd "$(dirname "$0")/.."
configure() {
  cmake -S . -B "$1" -GNinja -DCMAKE_BUILD_TYPE=Release -DEMBER_BUILD_TESTS=ON -DEMBER_BUILD_EXAMPLES=OFF \
    -DEMBER_SANITIZE="$2" >/dev/null
}

echo "== ASan + UBSan: ctest"
configure build/asan address,undefined
ninja -C build/asan ember_cpp_tests
# Resident-memory checks (ResourceLifetime) measure nothing under ASan's quarantine and shadow memory;
# they run in the plain build.
ASAN_OPTIONS=detect_leaks=1:abort_on_error=0:strict_string_checks=1 \
UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1 \
  ctest --test-dir build/asan -j2 --output-on-failure -E 'ResourceLifetime\.'

echo "== TSan: the multi-threaded tests"
configure build/tsan thread
ninja -C build/tsan ember_cpp_tests
# OpenMP's runtime is not instrumented, so its own synchronisation would be reported: the tests run with
# one OpenMP thread and check ember's std::thread concurrency (shared functions, plans, variables, tapes).
TSAN_OPTIONS=halt_on_error=1:second_deadlock_stack=1 OMP_NUM_THREADS=1 \
  ./build/tsan/ember_cpp_tests --gtest_filter='*Concurrent*:*Concurrency*:*Thread*'
