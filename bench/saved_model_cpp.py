"""Loading a SavedModel and making the first call from C++ (issue 16: "from C++, under 5 ms for the MLP"),
next to TensorFlow's tf.saved_model.load plus first call of the same model.

    python3 bench/saved_model_cpp.py [--binary build/py/bench_saved_model_cpp] [--runs 7]

Writes bench/saved_model.py's MLP (a tf.Module, 64 -> 256 -> 256 -> 10 with ReLUs, first call on a batch of
32) with TensorFlow into a temporary directory, then runs
bench_saved_model_cpp in fresh processes (the cold figure: a new process's first load + call, ember's
one-time start-up included, and again with oneDNN's one-time sgemm set-up done before the clock) and TensorFlow's load + first call in fresh processes (TensorFlow imported
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
    import sys, numpy as np, tensorflow as tf
    sizes = (64, 256, 256, 10)
    rng = np.random.default_rng(0)

    class MLP(tf.Module):
        def __init__(self):
            super().__init__()
            self.weights = [tf.Variable((rng.normal(size=(a, b)) / np.sqrt(a)).astype(np.float32))
                            for a, b in zip(sizes, sizes[1:])]
            self.biases = [tf.Variable(np.zeros(b, np.float32)) for b in sizes[1:]]

        @tf.function(input_signature=[tf.TensorSpec([None, sizes[0]], tf.float32)])
        def __call__(self, x):
            for i, (w, b) in enumerate(zip(self.weights, self.biases)):
                x = tf.matmul(x, w) + b
                if i < len(self.weights) - 1:
                    x = tf.nn.relu(x)
            return x

    m = MLP()
    tf.saved_model.save(m, sys.argv[1], signatures=m.__call__)
''')

TF_LOAD = textwrap.dedent('''
    import sys, time, numpy as np, tensorflow as tf
    x = tf.constant(np.full((32, 64), 0.5, np.float32))
    t = time.perf_counter()
    m = tf.saved_model.load(sys.argv[1])
    m.signatures["serving_default"](x=x)
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
        def cpp_runs(*extra):
            return [json.loads(subprocess.run([binary, model, "20", "32", *extra], check=True, capture_output=True,
                                              text=True, env={"PATH": "/usr/bin:/bin"}).stdout)
                    for _ in range(args.runs)]

        cpp, prewarmed = cpp_runs(), cpp_runs("prewarm")
        tf_ms = [float(subprocess.run([sys.executable, "-c", TF_LOAD, model], check=True, capture_output=True,
                                      text=True, env=env).stdout.split()[-1]) for _ in range(args.runs)]
    cold = statistics.median(r["cold_ms"] for r in cpp)
    cold_cpu = statistics.median(r["cold_cpu_ms"] for r in cpp)
    cold_prewarmed = statistics.median(r["cold_ms"] for r in prewarmed)
    warm = statistics.median(r["warm_ms"] for r in cpp)
    tf_median = statistics.median(tf_ms)
    print(f"MLP 64-256-256-10 SavedModel (batch 32), load + first call (median of {args.runs} fresh processes):")
    print(f"  ember C++ cold (new process): {cold:8.3f} ms   (target < 5 ms)")
    print(f"  ember C++ cold, CPU time of the process (no waits for a core): {cold_cpu:8.3f} ms")
    print(f"  ember C++ cold, oneDNN's sgemm set up before the clock: {cold_prewarmed:8.3f} ms")
    print(f"  ember C++ warm (next loads):  {warm:8.3f} ms")
    print(f"  TensorFlow tf.saved_model.load + call: {tf_median:8.1f} ms   ratio {tf_median / cold:.0f}x")


if __name__ == "__main__":
    main()
