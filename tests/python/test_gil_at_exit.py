"""Threads still running ember when the interpreter exits (src/python/py_gil.h, Note [Threads at interpreter
exit]): a daemon thread calling py_function, numpy_function, a plain function, eager ops or a tf.data
pipeline while the main script ends must let the process exit 0, as TensorFlow does. Each scenario runs in
fresh child processes, several times, since the crash it guards against hit about half the runs."""
import os
import subprocess
import sys
import textwrap

import pytest

_RUNS = 6

_SCENARIOS = {
    "function_with_py_function": """
        @tf.function
        def f(x):
            return tf.py_function(lambda a: a * 2.0, [x], tf.float32)
        def body():
            f(tf.constant(1.0))
    """,
    "py_function_in_cond": """
        @tf.function
        def f(x):
            return tf.cond(x > 0.0, lambda: tf.py_function(lambda a: a * 2.0, [x], tf.float32), lambda: x)
        def body():
            f(tf.constant(1.0))
    """,
    "py_function_in_while": """
        @tf.function
        def f(x):
            step = lambda i, v: (i + 1, tf.reshape(tf.py_function(lambda a: a * 2.0, [v], tf.float32), []))
            return tf.while_loop(lambda i, v: i < 3, step, [0, x])[1]
        def body():
            f(tf.constant(1.0))
    """,
    "numpy_function": """
        @tf.function
        def f(x):
            return tf.numpy_function(lambda a: a * 2.0, [x], tf.float32)
        def body():
            f(tf.constant(1.0))
    """,
    "eager_py_function": """
        def body():
            tf.py_function(lambda a: a * 2.0, [tf.constant(1.0)], tf.float32)
    """,
    "dataset_map_py_function": """
        ds = tf.data.Dataset.range(1000).map(lambda i: tf.py_function(lambda a: a * 2, [i], tf.int64))
        def body():
            for _ in ds.take(50):
                pass
    """,
    "parallel_dataset_map_py_function": """
        ds = (tf.data.Dataset.range(1000)
              .map(lambda i: tf.py_function(lambda a: a * 2, [i], tf.int64), num_parallel_calls=4)
              .prefetch(2))
        def body():
            for _ in ds.take(50):
                pass
    """,
    "gradient_of_function_with_py_function": """
        @tf.function
        def f(x):
            return tf.py_function(lambda a: a * 2.0, [x], tf.float32)
        def body():
            x = tf.constant(1.0)
            with tf.GradientTape() as tape:
                tape.watch(x)
                y = f(x)
            tape.gradient(y, x)
    """,
    "plain_function": """
        w = tf.random.normal([256, 256])
        @tf.function
        def f(x):
            return tf.reduce_sum(tf.tanh(tf.matmul(x, w)) + tf.sigmoid(tf.matmul(w, x)))
        def body():
            f(w)
    """,
    "eager_ops": """
        x = tf.random.normal([128, 128])
        def body():
            tf.reduce_sum(tf.matmul(x, x) + tf.exp(x))
    """,
}

_DRIVER = """
import threading, time
import ember as tf
{scenario}
body()
threading.Thread(target=lambda: [body() for _ in iter(int, 1)], daemon=True).start()
time.sleep(0.3)
"""


def _child_env():
    # The children import the same ember as this test (sys.path carries this run's PYTHONPATH).
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(p for p in sys.path if p)
    return env


@pytest.mark.parametrize("name", sorted(_SCENARIOS))
def test_daemon_thread_running_ember_at_exit(name, tmp_path):
    script = tmp_path / f"exit_{name}.py"
    script.write_text(_DRIVER.format(scenario=textwrap.dedent(_SCENARIOS[name])))
    for run in range(_RUNS):
        # -S only when this run has it: an installed (editable) ember is found through site's import hook
        proc = subprocess.run([sys.executable, *(["-S"] if sys.flags.no_site else []), str(script)],
                              env=_child_env(), capture_output=True, text=True, timeout=120)
        assert proc.returncode == 0, f"run {run}: exit status {proc.returncode}\n{proc.stderr[-2000:]}"
