"""MirroredStrategy in one process (issue 19, part 3), side by side with TensorFlow, one subprocess each:

    python3 bench/distribute_mirrored.py [--quick]

The MLP of the issue (784-256-256-10, ReLU, SGD, sparse categorical cross-entropy from logits, global batch
1024) trained by a custom loop whose step is one ember.function / tf.function: on one device (no strategy),
and under MirroredStrategy over 2 logical CPUs (the CPU split with set_logical_device_configuration; each
replica takes 512 rows, the gradients are all-reduced, the weights updated once). Prints the median step
time of each and the ratio mirrored / single (the cost of the replication on the same cores), for ember and
TensorFlow. Timings on a shared machine are noisy: the script warns when other processes kept the cores busy.
"""
import os

os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")

import argparse  # noqa: E402
import json  # noqa: E402
import statistics  # noqa: E402
import sys  # noqa: E402
import time  # noqa: E402

import numpy as np  # noqa: E402

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
from workers import run_workers  # noqa: E402

BATCH, REPLICAS = 1024, 2


def measure(tf, strategy, steps, warmup=5):
    rng = np.random.default_rng(0)
    x = rng.standard_normal((BATCH, 784)).astype(np.float32)
    y = rng.integers(0, 10, BATCH).astype(np.int64)
    scope = strategy.scope() if strategy is not None else _null()
    with scope:
        model = tf.keras.Sequential([tf.keras.layers.Dense(256, activation="relu", input_shape=(784,)),
                                     tf.keras.layers.Dense(256, activation="relu"), tf.keras.layers.Dense(10)])
        optimizer = tf.keras.optimizers.SGD(0.01)
    loss_fn = tf.keras.losses.SparseCategoricalCrossentropy(from_logits=True, reduction="none")

    def replica_step(xb, yb):
        with tf.GradientTape() as tape:
            loss = tf.nn.compute_average_loss(loss_fn(yb, model(xb)), global_batch_size=BATCH)
        grads = tape.gradient(loss, model.trainable_variables)
        optimizer.apply_gradients(zip(grads, model.trainable_variables))
        return loss

    if strategy is None:
        step = tf.function(replica_step)
        batch = (tf.constant(x), tf.constant(y))
    else:
        @tf.function
        def step(xb, yb):
            return strategy.reduce("SUM", strategy.run(replica_step, args=(xb, yb)), axis=None)

        dataset = tf.data.Dataset.from_tensor_slices((x, y)).batch(BATCH)
        batch = next(iter(strategy.experimental_distribute_dataset(dataset)))
    times = []
    for i in range(warmup + steps):
        start = time.perf_counter()
        loss = step(*batch)
        float(loss)
        if i >= warmup:
            times.append(time.perf_counter() - start)
    return statistics.median(times) * 1e3, float(loss)


class _null:
    def __enter__(self):
        return None

    def __exit__(self, *exc):
        return False


def worker(name, quick):
    if name == "ember":
        import ember as tf
    else:
        import tensorflow as tf
    if hasattr(tf.config, "set_logical_device_configuration"):  # ember before its device layer: names only
        cpu = tf.config.list_physical_devices("CPU")[0]
        tf.config.set_logical_device_configuration(cpu, [tf.config.LogicalDeviceConfiguration()] * REPLICAS)
    steps = 10 if quick else 40
    single_ms, single_loss = measure(tf, None, steps)
    strategy = tf.distribute.MirroredStrategy([f"cpu:{i}" for i in range(REPLICAS)])
    mirrored_ms, mirrored_loss = measure(tf, strategy, steps)
    print(json.dumps({"single_ms": single_ms, "mirrored_ms": mirrored_ms, "single_loss": single_loss,
                      "mirrored_loss": mirrored_loss}))


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--worker")
    parser.add_argument("--quick", action="store_true")
    args = parser.parse_args()
    if args.worker:
        return worker(args.worker, args.quick)
    results, notes = run_workers(__file__, ("ember", "tensorflow"), ["--quick"] if args.quick else [])
    print(f"MLP 784-256-256-10, global batch {BATCH}, SGD; step = one (tf|ember).function; "
          f"{os.cpu_count()} cores")
    print(f"{'framework':<12}{'1 device ms':>14}{'Mirrored x2 ms':>16}{'mirrored/single':>17}")
    for name, r in results.items():
        print(f"{name:<12}{r['single_ms']:>14.2f}{r['mirrored_ms']:>16.2f}{r['mirrored_ms'] / r['single_ms']:>17.2f}")
    if "ember" in results and "tensorflow" in results:
        e, t = results["ember"], results["tensorflow"]
        print(f"ember / TensorFlow: 1 device {e['single_ms'] / t['single_ms']:.2f}, "
              f"Mirrored x2 {e['mirrored_ms'] / t['mirrored_ms']:.2f}")
    for note in notes:
        print(note)


if __name__ == "__main__":
    main()
