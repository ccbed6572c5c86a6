"""Issue 12, item 13: variables and functions that are created and dropped leave nothing behind (the
C++ side runs the 1M-variable / 100k-function counts in tests/cpp/api/resource_lifetime_test.cc; these
check the same through the Python front end, with its own caches)."""
import gc

import ember as tf


def resident_mib():
    with open("/proc/self/statm") as f:
        return int(f.read().split()[1]) * 4096 / 2**20


def test_dropped_variables_leave_nothing_behind():
    for _ in range(2000):
        tf.Variable(1.0)
    before = resident_mib()
    for i in range(200_000):
        tf.Variable(float(i))
    gc.collect()
    assert resident_mib() - before < 16  # ~330 bytes each used to stay behind: 63 MiB


def test_dropped_differentiated_functions_leave_nothing_behind():
    x = tf.constant([1.0, 2.0])

    def make_use_and_drop(under_tape):
        w = tf.Variable([1.0, 2.0])
        f = tf.function(lambda a: tf.reduce_sum(a * w + 1.0))
        if not under_tape:
            return f(x)
        with tf.GradientTape() as tape:
            tape.watch(x)
            y = f(x)
        return tape.gradient(y, [x, w])

    for i in range(300):
        make_use_and_drop(i % 2 == 0)
    gc.collect()
    before = resident_mib()
    for i in range(4000):
        make_use_and_drop(i % 2 == 0)
    gc.collect()
    # Each differentiated function used to keep ~30 KB for ever (its forward graph and cached plan).
    assert resident_mib() - before < 16
