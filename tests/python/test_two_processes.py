"""Issue 12, item 14: two ember processes on one small machine both make progress. Idle OpenMP workers
that spin for milliseconds after each parallel region used to take the other process's cores (a 15 us
fused call became 0.6-2 ms in both). This is a liveness check with a wide margin, not a benchmark."""
import os
import subprocess
import sys
import time

# The subprocesses import the ember this process imports (an editable install's hook would win over
# PYTHONPATH without -S).
SITE_FLAGS = ["-S"] if sys.flags.no_site else []
WORKER = r"""
import sys, time
import ember as tf
x = tf.random.uniform([256 * 1024])        # large enough for the fused kernel to use every core
@tf.function
def f(a):
    return tf.tanh(a * 2.0 + 1.0) * a - 0.5
for _ in range(20):
    f(x)
start = time.perf_counter()
for _ in range(int(sys.argv[1])):
    y = f(x)
y.numpy()
print("done", time.perf_counter() - start, flush=True)
"""


def run_workers(count, calls):
    env = dict(os.environ)
    env.pop("GOMP_SPINCOUNT", None)  # what ember chooses by itself
    procs = [subprocess.Popen([sys.executable, *SITE_FLAGS, "-c", WORKER, str(calls)], stdout=subprocess.PIPE,
                              stderr=subprocess.PIPE, text=True, env=env) for _ in range(count)]
    results = []
    for p in procs:
        out, err = p.communicate(timeout=300)
        assert p.returncode == 0, err
        assert out.startswith("done"), out
        results.append(float(out.split()[1]))
    return results


def test_two_processes_both_make_progress():
    (alone,) = run_workers(1, 400)
    both = run_workers(2, 400)
    # Sharing two cores, each may take about twice as long as alone; a stall is orders of magnitude.
    for seconds in both:
        assert seconds < 20 * alone + 5.0, (alone, both)


def test_ember_sets_a_short_openmp_spin_unless_the_user_chose_one():
    code = "import os, ember; print(os.environ['GOMP_SPINCOUNT'])"
    env = dict(os.environ)
    env.pop("GOMP_SPINCOUNT", None)
    env.pop("OMP_WAIT_POLICY", None)
    import ember
    assert subprocess.run([sys.executable, *SITE_FLAGS, "-c", code], env=env, capture_output=True,
                          text=True).stdout.strip() == ember._DEFAULT_GOMP_SPINCOUNT
    env["GOMP_SPINCOUNT"] = "123"
    assert subprocess.run([sys.executable, *SITE_FLAGS, "-c", code], env=env, capture_output=True,
                          text=True).stdout.strip() == "123"
