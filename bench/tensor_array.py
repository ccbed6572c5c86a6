"""TensorArray writes in a staged while_loop (issue 15): the LSTM-style use, one [32, 128] row written per
step, for trip counts known only when the function runs (``input_signature`` with a None time dimension):

    python3 bench/tensor_array.py [--quick]

Per framework (ember, then TensorFlow running the same TF2 code in a subprocess) it prints the time per call
and per step for T = 100, 200, 400, 800, and the per-step ratio T=800 / T=100: about 1 when a write costs
O(row) (the loop hands its buffer to the body, InplaceUpdate writes over it), about 8 when each write copies
the whole array. The first call's result is checked against NumPy.
"""
import argparse
import json
import os
import subprocess
import sys
import time

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)


def measure(lib, steps, reps):
    if lib == "ember":
        import ember as tf
    else:
        import tensorflow as tf

    @tf.function(input_signature=[tf.TensorSpec([None, 32, 128], tf.float32)])
    def f(x):
        n = tf.shape(x)[0]
        ta = tf.TensorArray(tf.float32, size=n, element_shape=[32, 128])

        def body(i, h, ta):
            h = tf.tanh(h * 0.5 + x[i])
            return i + 1, h, ta.write(i, h)

        _, _, ta = tf.while_loop(lambda i, h, ta: i < n, body, [0, tf.zeros([32, 128]), ta])
        return ta.stack()

    out = {}
    for t in steps:
        x = np.random.default_rng(t).standard_normal((t, 32, 128)).astype(np.float32)
        got = f(tf.constant(x)).numpy()
        h, want = np.zeros((32, 128), np.float32), []
        for k in range(t):
            h = np.tanh(h * 0.5 + x[k])
            want.append(h)
        ok = np.allclose(got, np.stack(want), atol=1e-5)
        xt = tf.constant(x)
        best = float("inf")
        for _ in range(3):
            start = time.perf_counter()
            for _ in range(reps):
                f(xt)
            best = min(best, (time.perf_counter() - start) / reps)
        out[t] = (best, ok)
    return out


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--quick", action="store_true")
    parser.add_argument("--child", choices=["ember", "tensorflow"])
    args = parser.parse_args()
    steps, reps = [100, 200, 400, 800], 3 if args.quick else 10
    if args.child:
        print(json.dumps(measure(args.child, steps, reps)))
        return
    for lib in ("ember", "tensorflow"):
        # ember from this checkout, not an installed copy (-S skips the editable install's path hook).
        import site

        env = dict(os.environ, PYTHONPATH=os.pathsep.join([os.path.join(ROOT, "python")] + site.getsitepackages()))
        proc = subprocess.run([sys.executable, "-S", __file__, "--child", lib] + (["--quick"] if args.quick else []),
                              capture_output=True, text=True, env=env)
        if proc.returncode != 0:
            print(f"{lib}: failed: {proc.stderr.strip().splitlines()[-1:]}")
            continue
        result = {int(k): v for k, v in json.loads(proc.stdout.strip().splitlines()[-1]).items()}
        for t, (sec, ok) in sorted(result.items()):
            print(f"{lib:10s} T={t:4d}: {sec * 1e3:8.2f} ms/call {sec / t * 1e6:7.1f} us/step "
                  f"{'ok' if ok else 'FAIL'}")
        print(f"{lib:10s} per-step ratio T=800/T=100: {result[800][0] / 800 / (result[100][0] / 100):.2f}")


if __name__ == "__main__":
    main()
