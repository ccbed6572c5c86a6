"""A tf.data input pipeline (issue 18), side by side in one run, one subprocess per framework:

    python3 bench/data.py [--quick]

Workload: ``from_tensor_slices((x, y))`` of N examples (x: float32 [N, 32], y: int32 [N]) → ``map`` of a
cheap function (``(x * 2 + 1, y)``) with ``num_parallel_calls=tf.data.AUTOTUNE`` → ``batch(128)`` →
``prefetch(tf.data.AUTOTUNE)``, iterated to the end in Python, as a training loop reads it. The figure is
elements (examples) per second over whole epochs (the median epoch); the first epoch is a warm-up (it
traces the map function). Target (issue 18): ember at least 2x TensorFlow's throughput.

Every epoch's batches are checked against NumPy (x * 2 + 1, y, in order), so a fast wrong answer shows as
FAIL.
"""
import os

os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")  # before NumPy starts its BLAS pool

import argparse  # noqa: E402
import json  # noqa: E402
import statistics  # noqa: E402
import sys  # noqa: E402
import time  # noqa: E402

import numpy as np  # noqa: E402

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
from workers import run_workers  # noqa: E402

N, FEATURES, BATCH = 200_000, 32, 128


def data(quick):
    rng = np.random.default_rng(0)
    n = N // 8 if quick else N
    return rng.standard_normal((n, FEATURES)).astype(np.float32), np.arange(n, dtype=np.int32)


def pipeline(tf, x, y):
    return (tf.data.Dataset.from_tensor_slices((x, y))
            .map(lambda a, b: (a * 2.0 + 1.0, b), num_parallel_calls=tf.data.AUTOTUNE)
            .batch(BATCH)
            .prefetch(tf.data.AUTOTUNE))


def epoch(ds, x, y):
    """One pass; returns (seconds, elements, whether every batch was right)."""
    t0 = time.perf_counter()
    n, ok, batches = 0, True, []
    for a, b in ds:
        batches.append((a, b))
        n += int(b.shape[0])
    seconds = time.perf_counter() - t0
    at = 0
    for a, b in batches:  # checked after the clock stops
        k = int(b.shape[0])
        ok = ok and np.array_equal(a.numpy(), x[at:at + k] * 2.0 + 1.0) and np.array_equal(b.numpy(), y[at:at + k])
        at += k
    return seconds, n, ok and at == len(y)


def worker(framework, quick):
    x, y = data(quick)
    if framework == "ember":
        import ember as tf
    elif framework == "tensorflow":
        import tensorflow as tf
    else:
        raise ValueError(framework)
    ds = pipeline(tf, x, y)
    epoch(ds, x, y)  # warm-up: traces the map function, starts the threads
    rates, ok = [], True
    for _ in range(3 if quick else 5):
        seconds, n, good = epoch(ds, x, y)
        rates.append(n / seconds)
        ok = ok and good
    print(json.dumps({"version": tf.__version__, "rate": statistics.median(rates), "ok": ok}))


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--quick", action="store_true", help="an eighth of the examples")
    parser.add_argument("--worker")
    args = parser.parse_args()
    if args.worker:
        worker(args.worker, args.quick)
        return
    results, lines = run_workers(__file__, ("ember", "tensorflow"), ["--quick"] if args.quick else [])
    print(f"bench/data.py{' --quick' if args.quick else ''}: {os.cpu_count()} CPU threads; "
          + ", ".join(f"{fw} {r['version']}" for fw, r in results.items()))
    for line in lines:
        print(line)
    ember_rate = results.get("ember", {}).get("rate")
    print(f"{'framework':<11} {'elements/s':>12} {'ember/this':>11}  check")
    for fw, r in results.items():
        ratio = f"{ember_rate / r['rate']:10.2f}x" if ember_rate else f"{'-':>11}"
        print(f"{fw:<11} {r['rate']:12,.0f} {ratio}  {'ok' if r['ok'] else 'FAIL'}")
    print("target: ember/tensorflow >= 2")


if __name__ == "__main__":
    main()
