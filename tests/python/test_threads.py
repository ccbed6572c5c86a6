"""Issue 20, threads under load: ember's OpenMP wait policy is set before OpenMP starts unless the user
chose one, small work stays on the calling thread, and results do not depend on the thread count. No
timings here: bench/two_process.py measures the policy."""
import os
import subprocess
import sys

import numpy as np

import ember as tf
from ember import _C

SHOW = "import os, ember; print(os.environ.get('GOMP_SPINCOUNT'), os.environ.get('OMP_WAIT_POLICY'))"


def run_python(code, **env_changes):
    env = {k: v for k, v in os.environ.items() if k not in ("GOMP_SPINCOUNT", "OMP_WAIT_POLICY")}
    env.update(env_changes)
    flags = ["-S"] if sys.flags.no_site else []
    proc = subprocess.run([sys.executable, *flags, "-c", code], env=env, capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr
    return proc


def test_a_short_spin_is_the_default():
    out = run_python(SHOW).stdout.split()
    assert out == [tf._DEFAULT_GOMP_SPINCOUNT, "None"]


def test_libgomp_reads_the_default_when_it_starts():
    # OMP_DISPLAY_ENV makes libgomp print the settings it initialised with: ember's value must be among
    # them, i.e. set before the extension loaded OpenMP.
    err = run_python("import ember", OMP_DISPLAY_ENV="verbose").stderr
    assert f"GOMP_SPINCOUNT = '{tf._DEFAULT_GOMP_SPINCOUNT}'" in err, err


def test_the_users_choice_wins():
    assert run_python(SHOW, GOMP_SPINCOUNT="123").stdout.split() == ["123", "None"]
    # A wait policy of the user's own: ember adds no spin count that would override it.
    assert run_python(SHOW, OMP_WAIT_POLICY="active").stdout.split() == ["None", "active"]
    err = run_python("import ember", OMP_WAIT_POLICY="passive", OMP_DISPLAY_ENV="verbose").stderr
    assert "GOMP_SPINCOUNT = '0'" in err, err


def with_threads(n, fn, others_load=0.0):
    """Runs fn with n intra-op threads, as if other processes kept `others_load` cores busy (the machine
    running the tests may be busy, and ember would then stay on one thread by itself)."""
    saved = tf.config.threading.get_intra_op_parallelism_threads()
    tf.config.threading.set_intra_op_parallelism_threads(n)
    _C.force_other_processes_load(others_load)
    try:
        return fn()
    finally:
        _C.force_other_processes_load(-1.0)
        tf.config.threading.set_intra_op_parallelism_threads(saved)


def regions_during(fn):
    before = _C.parallel_regions_started()
    result = fn()
    return result, _C.parallel_regions_started() - before


def test_small_work_stays_on_the_calling_thread():
    x = tf.random.uniform([64, 64])

    @tf.function
    def chain(a):
        return tf.tanh(a * 2.0 + 1.0) * tf.sigmoid(a) - tf.exp(-a * a) * 0.5

    h = tf.random.uniform([64, 16])
    u = tf.random.uniform([16, 256])

    def small():
        return [chain(x), tf.matmul(h, u), tf.reduce_sum(x, axis=0), tf.nn.softmax(x)]

    with_threads(2, small)  # traced and warmed
    _, regions = regions_during(lambda: with_threads(2, small))
    assert regions == 0


def test_large_work_goes_parallel_and_gives_the_same_results():
    rng = np.random.default_rng(0)
    x = tf.constant(rng.standard_normal([1 << 20]).astype(np.float32))
    a = tf.constant(rng.standard_normal([256, 1024]).astype(np.float32))
    b = tf.constant(rng.standard_normal([1024, 512]).astype(np.float32))

    @tf.function
    def chain(v):
        return tf.tanh(v * 2.0 + 1.0) * v - 0.5

    def large():
        return [chain(x).numpy(), tf.reduce_sum(x).numpy(), tf.matmul(a, b).numpy(), tf.exp(x).numpy()]

    one = with_threads(1, large)
    two, regions = regions_during(lambda: with_threads(2, large))
    assert regions >= 3  # the test would pass vacuously if nothing went parallel
    for r1, r2 in zip(one, two):
        np.testing.assert_allclose(r1, r2, rtol=1e-5, atol=1e-5)
    np.testing.assert_array_equal(one[0], two[0])  # element-wise work splits without changing any value
    np.testing.assert_array_equal(one[3], two[3])


def test_beside_a_busy_process_large_work_stays_on_one_thread():
    x = tf.random.uniform([1 << 20])
    a, b = tf.random.uniform([256, 1024]), tf.random.uniform([1024, 512])

    def large():
        return [tf.tanh(x), tf.reduce_sum(x), tf.matmul(a, b)]

    quiet, regions_quiet = regions_during(lambda: with_threads(2, large))
    busy, regions_busy = regions_during(lambda: with_threads(2, large, others_load=os.cpu_count() - 1.0))
    assert regions_quiet >= 3 and regions_busy == 0
    for q, r in zip(quiet, busy):
        np.testing.assert_allclose(q.numpy(), r.numpy(), rtol=1e-5, atol=1e-5)


def test_adaptive_threads_can_be_turned_off():
    # Another process keeps every core busy; with EMBER_ADAPTIVE_THREADS=0 ember still counts every core
    # as free after several of its 100 ms windows (with the measurement on it would see the spinners).
    spinners = [subprocess.Popen([sys.executable, "-c", "while True: pass"]) for _ in range(os.cpu_count())]
    try:
        code = ("import os, time, ember\n"
                "x = ember.random.uniform([1 << 20])\n"
                "end = time.time() + 0.5\n"
                "while time.time() < end: ember.tanh(x)\n"
                "print(ember._C.cores_free_for_parallel_work(), os.cpu_count())")
        free, cores = run_python(code, EMBER_ADAPTIVE_THREADS="0").stdout.split()
        assert free == cores
    finally:
        for p in spinners:
            p.kill()
            p.wait()
