"""Loading a SavedModel and making the first call (issue 16), ember vs TensorFlow, on the same files:

    python3 bench/saved_model.py [--quick]

Models (written once by ember.saved_model.save into a temporary directory; TensorFlow 2.21 loads them too):
- mlp: 64 -> 256 -> 256 -> 10 with ReLUs, a ``serving_default`` signature with a None batch dimension,
  called on a batch of 32.
- l2hmc: the L2HMC transition of bench/l2hmc_model.py (200 chains, 10 leapfrog steps, autodiff inside) as
  a Module's ember.function with an input_signature.

Each measurement is one fresh worker process (the framework already imported, not timed): the time from
``load(path)`` until the first ``signatures["serving_default"](...)`` has returned its values, as a
serving process pays it. The median of the runs is printed; the first call's result is checked against
the saving process's output. Target: ember >= 10x faster than TensorFlow's tf.saved_model.load + first
call. The load alone (before the call) is printed in parentheses.
"""
import os

os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")  # before NumPy starts its BLAS pool

import argparse  # noqa: E402
import json  # noqa: E402
import shutil  # noqa: E402
import statistics  # noqa: E402
import subprocess  # noqa: E402
import sys  # noqa: E402
import tempfile  # noqa: E402
import time  # noqa: E402

import numpy as np  # noqa: E402

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
from workers import QUIET_CORES, others_cores_during  # noqa: E402

ROOT = os.path.dirname(HERE)
MLP_SIZES = (64, 256, 256, 10)
MLP_BATCH = 32


def build_models(tf, directory):
    """Saves the two models under ``directory``; returns {name: (inputs by keyword, expected outputs)}."""
    import l2hmc_model as l2

    rng = np.random.default_rng(0)

    class MLP(tf.Module):
        def __init__(self):
            super().__init__()
            self.weights = [tf.Variable(rng.normal(0, 0.1, (a, b)).astype(np.float32))
                            for a, b in zip(MLP_SIZES, MLP_SIZES[1:])]
            self.biases = [tf.Variable(np.zeros(b, np.float32)) for b in MLP_SIZES[1:]]

        @tf.function(input_signature=[tf.TensorSpec([None, MLP_SIZES[0]], tf.float32)])
        def __call__(self, x):
            for i, (w, b) in enumerate(zip(self.weights, self.biases)):
                x = tf.matmul(x, w) + b
                if i + 1 < len(self.weights):
                    x = tf.nn.relu(x)
            return x

    class L2HMC(tf.Module):
        def __init__(self):
            super().__init__()
            self.params = [tf.Variable(p) for p in l2.l2hmc_params(rng)]

        @tf.function(input_signature=[tf.TensorSpec([l2.BATCH, l2.D], tf.float32)] * 2 +
                     [tf.TensorSpec([l2.BATCH], tf.float32)])
        def transition(self, x0, v0, u):
            return l2.tf_style(tf, self.params).transition(x0, v0, u)

    models = {}
    mlp = MLP()
    x = rng.normal(size=(MLP_BATCH, MLP_SIZES[0])).astype(np.float32)
    tf.saved_model.save(mlp, os.path.join(directory, "mlp"))
    models["mlp"] = ({"x": x}, [mlp(tf.constant(x)).numpy()])
    model = L2HMC()
    inputs = {"x0": rng.normal(size=(l2.BATCH, l2.D)).astype(np.float32),
              "v0": rng.normal(size=(l2.BATCH, l2.D)).astype(np.float32),
              "u": rng.uniform(size=(l2.BATCH,)).astype(np.float32)}
    tf.saved_model.save(model, os.path.join(directory, "l2hmc"))
    models["l2hmc"] = (inputs, [t.numpy() for t in model.transition(*[tf.constant(inputs[k]) for k in
                                                                         ("x0", "v0", "u")])])
    return models


def worker(framework, path, inputs_file):
    if framework == "ember":
        import ember as tf
    else:
        import tensorflow as tf
    data = np.load(inputs_file)
    inputs = {k[3:]: data[k] for k in data.files if k.startswith("in_")}
    feeds = {k: tf.constant(v) for k, v in inputs.items()}
    start = time.perf_counter()
    loaded = tf.saved_model.load(path)
    loaded_at = time.perf_counter()
    out = loaded.signatures["serving_default"](**feeds)
    values = [out[k].numpy() for k in sorted(out)]
    elapsed = time.perf_counter() - start
    expected = [data[k] for k in sorted(k for k in data.files if k.startswith("out_"))]
    error = max(float(np.max(np.abs(a - b) / (1 + np.abs(b)))) for a, b in zip(values, expected))
    print(json.dumps({"time": elapsed, "load": loaded_at - start, "error": error, "version": tf.__version__}))


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--quick", action="store_true")
    parser.add_argument("--worker", nargs=3)
    args = parser.parse_args()
    if args.worker:
        worker(*args.worker)
        return
    env = dict(os.environ, TF_CPP_MIN_LOG_LEVEL="3",
               PYTHONPATH=os.path.join(ROOT, "python") + os.pathsep + os.environ.get("PYTHONPATH", ""))
    sys.path.insert(0, os.path.join(ROOT, "python"))
    import ember

    runs = 3 if args.quick else 7
    directory = tempfile.mkdtemp(prefix="ember-bench-saved-model-")
    try:
        models = build_models(ember, directory)
        results, lines = {}, []
        for name, (inputs, outputs) in models.items():
            inputs_file = os.path.join(directory, f"{name}.npz")
            np.savez(inputs_file, **{f"in_{k}": v for k, v in inputs.items()},
                     **{f"out_{i}": v for i, v in enumerate(outputs)})
            for fw in ("ember", "tensorflow"):
                flags = ["-S"] if sys.flags.no_site else []
                cmd = [sys.executable, *flags, __file__, "--worker", fw, os.path.join(directory, name), inputs_file]
                times, loads, errs = [], [], []
                for _ in range(runs):
                    proc, others = others_cores_during(
                        lambda: subprocess.run(cmd, capture_output=True, text=True, env=env))
                    if proc.returncode != 0:
                        results[(name, fw)] = {"failed": (proc.stderr.strip().splitlines() or ["?"])[-1][:240]}
                        break
                    r = json.loads(proc.stdout.strip().splitlines()[-1])
                    times.append(r["time"])
                    loads.append(r["load"])
                    errs.append(r["error"])
                    if others is not None and others > QUIET_CORES:
                        lines.append(f"  WARNING: other processes kept {others:.2f} of {os.cpu_count()} cores busy "
                                     f"during a {fw} {name} run; its timing is disturbed")
                else:
                    results[(name, fw)] = {"time": statistics.median(times), "load": statistics.median(loads),
                                           "error": max(errs),
                                           "version": r["version"]}
    finally:
        shutil.rmtree(directory, ignore_errors=True)
    versions = {fw: r["version"] for (_, fw), r in results.items() if "version" in r}
    print(f"bench/saved_model.py: {os.cpu_count()} CPU threads; "
          + ", ".join(f"{fw} {v}" for fw, v in versions.items()) + f"; median of {runs} fresh processes")
    for line in sorted(set(lines)):
        print(line)
    print(f"{'model':<7} {'framework':<11} {'load+call ms':>13} {'vs ember':>9} {'(load ms)':>10}  check")
    for name in models:
        ember_time = results.get((name, "ember"), {}).get("time")
        for fw in ("ember", "tensorflow"):
            r = results.get((name, fw), {})
            if "failed" in r:
                print(f"{name:<7} {fw:<11} {'FAILED':>13}  {r['failed']}")
                continue
            ratio = f"{r['time'] / ember_time:8.2f}x" if ember_time else f"{'-':>9}"
            check = "ok" if r["error"] < 1e-3 else f"FAIL (error {r['error']:.2e})"
            print(f"{name:<7} {fw:<11} {r['time'] * 1e3:13.2f} {ratio} {r['load'] * 1e3:10.2f}  {check}")
    print("target: TensorFlow/ember >= 10 for load + first call")


if __name__ == "__main__":
    main()
