"""Loading a SavedModel and making the first call from C++ (issue 16: "from C++, under 5 ms for the MLP"),
next to TensorFlow's tf.saved_model.load plus first call of the same model.

    python3 bench/saved_model_cpp.py [--binary build/py/bench_saved_model_cpp] [--runs 7]

Writes a tf_keras MLP (784-256-256-10, relu) with TensorFlow into a temporary directory, then runs
bench_saved_model_cpp in fresh processes (the cold figure: a new process's first load + call, ember's
one-time start-up included) and TensorFlow's load + first call in fresh processes (TensorFlow imported
before the clock starts). Prints medians and the ratio.
"""

import argparse
import glob
import json
import os
import statistics
import subprocess
import sys
import tempfile
import textwrap

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

WRITE = textwrap.dedent('''
    import sys, tf_keras as keras, tensorflow as tf
    model = keras.Sequential([keras.layers.Dense(256, activation="relu", input_shape=(784,)),
                              keras.layers.Dense(256, activation="relu"), keras.layers.Dense(10)])
    tf.saved_model.save(model, sys.argv[1])
''')

TF_LOAD = textwrap.dedent('''
    import sys, time, numpy as np, tensorflow as tf
    x = tf.constant(np.full((1, 784), 0.5, np.float32))
    t = time.perf_counter()
    m = tf.saved_model.load(sys.argv[1])
    m.signatures["serving_default"](dense_input=x)
    print((time.perf_counter() - t) * 1e3)
''')


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--binary")
    parser.add_argument("--runs", type=int, default=7)
    args = parser.parse_args()
    binary = args.binary or sorted(glob.glob(os.path.join(ROOT, "build", "*", "bench_saved_model_cpp")),
                                   key=os.path.getmtime)[-1]
    env = dict(os.environ, TF_CPP_MIN_LOG_LEVEL="3", CUDA_VISIBLE_DEVICES="")
    with tempfile.TemporaryDirectory() as tmp:
        model = os.path.join(tmp, "mlp")
        subprocess.run([sys.executable, "-c", WRITE, model], check=True, env=env, capture_output=True)
        cpp = [json.loads(subprocess.run([binary, model, "20"], check=True, capture_output=True, text=True,
                                         env={"PATH": "/usr/bin:/bin"}).stdout) for _ in range(args.runs)]
        tf_ms = [float(subprocess.run([sys.executable, "-c", TF_LOAD, model], check=True, capture_output=True,
                                      text=True, env=env).stdout.split()[-1]) for _ in range(args.runs)]
    cold = statistics.median(r["cold_ms"] for r in cpp)
    warm = statistics.median(r["warm_ms"] for r in cpp)
    tf_median = statistics.median(tf_ms)
    print(f"MLP 784-256-256-10 SavedModel, load + first call (median of {args.runs} fresh processes):")
    print(f"  ember C++ cold (new process): {cold:8.3f} ms   (target < 5 ms)")
    print(f"  ember C++ warm (next loads):  {warm:8.3f} ms")
    print(f"  TensorFlow tf.saved_model.load + call: {tf_median:8.1f} ms   ratio {tf_median / cold:.0f}x")


if __name__ == "__main__":
    main()
