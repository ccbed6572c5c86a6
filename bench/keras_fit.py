"""Keras ``fit`` (issue 18), side by side in one run, one subprocess per framework:

    python3 bench/keras_fit.py [--quick] [--threads N]

- cnn: one epoch of ``model.fit`` of the small digits CNN of examples/python/keras_digits_cnn.py (scikit-learn's
  digits upsampled to 28x28, 1,437 training images, batch 32: 45 steps; Conv2D(16) -> MaxPool -> Conv2D(32) ->
  MaxPool -> Flatten -> Dense(64) -> Dense(10), Adam, sparse categorical cross-entropy, accuracy metric), in
  ember.keras and tf_keras (Keras 2), against a PyTorch training loop of the same model (NCHW, the same
  optimizer and loss, accuracy counted as it trains). "epoch 1" includes tracing the train step (PyTorch
  has none); "epoch" is the median of the following epochs (``fit(epochs=1)`` called again).
- lstm: Keras LSTM(128) -> Dense(1) on sequences of 100 steps of 32 features, batch 32, mean squared error,
  Adam: ``fit`` for 50 steps (one epoch of 1,600 sequences), after a warm-up ``fit`` that traced the step;
  against torch ``nn.LSTM`` + ``nn.Linear`` trained eagerly for 50 steps.
Targets (issue 18): cnn at least 2x faster than tf_keras ``fit`` and faster than PyTorch; lstm faster than
both. Each framework's result is checked: the CNN's accuracy over its epochs must pass 90%, the LSTM's loss
must fall. PyTorch comes from EMBER_BENCH_PATH_TORCH (e.g. /work/torchenv). Timings on a shared machine are
noisy: the script warns when other processes kept the cores busy. ``--threads N`` gives every framework N
intra-op threads (default: each framework's own choice, one per core); on a machine busy with other work,
``--threads 1`` shows each framework without the cost of its threads waiting for cores.
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
sys.path.insert(0, os.path.join(os.path.dirname(HERE), "examples", "python"))
from workers import run_workers  # noqa: E402

STEPS, FEATURES, UNITS, BATCH, LSTM_STEPS = 100, 32, 128, 32, 50


def cnn_data():
    from keras_digits_cnn import load_digits_28

    return load_digits_28()


def lstm_data():
    rng = np.random.default_rng(0)
    x = rng.standard_normal((BATCH * LSTM_STEPS, STEPS, FEATURES)).astype(np.float32)
    y = (x[:, -10:, :4].mean(axis=(1, 2))[:, None] * 3).astype(np.float32)  # learnable from the last steps
    return x, y


def keras_cases(keras, quick):
    """{case: result} for ember.keras or tf_keras: the same Keras code in both."""
    from keras_digits_cnn import build_model

    out = {}
    (x, y), (x_test, y_test) = cnn_data()
    model = build_model(keras)
    t0 = time.perf_counter()
    h = model.fit(x, y, batch_size=BATCH, epochs=1, verbose=0)
    first = time.perf_counter() - t0
    times, accuracy = [], [h.history["accuracy"][-1]]
    for _ in range(2 if quick else 5):
        t0 = time.perf_counter()
        h = model.fit(x, y, batch_size=BATCH, epochs=1, verbose=0)
        times.append(time.perf_counter() - t0)
        accuracy.append(h.history["accuracy"][-1])
    out["cnn"] = {"first": first, "time": statistics.median(times), "check": max(accuracy)}

    xs, ys = lstm_data()
    layers = keras.layers
    model = keras.Sequential([layers.Input((STEPS, FEATURES)), layers.LSTM(UNITS), layers.Dense(1)])
    model.compile(optimizer=keras.optimizers.Adam(learning_rate=1e-3), loss="mse")
    t0 = time.perf_counter()
    h0 = model.fit(xs[:2 * BATCH], ys[:2 * BATCH], batch_size=BATCH, epochs=1, verbose=0)
    first = time.perf_counter() - t0
    times, losses = [], [h0.history["loss"][-1]]
    for _ in range(1 if quick else 3):
        t0 = time.perf_counter()
        h = model.fit(xs, ys, batch_size=BATCH, epochs=1, verbose=0)
        times.append(time.perf_counter() - t0)
        losses.append(h.history["loss"][-1])
    out["lstm"] = {"first": first, "time": min(times) if quick else statistics.median(times),
                   "check": float(losses[-1] < losses[0])}
    return out


def torch_cases(quick):
    import torch

    torch.manual_seed(0)
    nn = torch.nn
    out = {}
    (x, y), _ = cnn_data()
    x_t, y_t = torch.from_numpy(np.ascontiguousarray(x.transpose(0, 3, 1, 2))), torch.from_numpy(y).long()
    model = nn.Sequential(nn.Conv2d(1, 16, 3), nn.ReLU(), nn.MaxPool2d(2), nn.Conv2d(16, 32, 3), nn.ReLU(),
                          nn.MaxPool2d(2), nn.Flatten(), nn.Linear(32 * 5 * 5, 64), nn.ReLU(), nn.Linear(64, 10))
    opt = torch.optim.Adam(model.parameters(), lr=2e-3)
    loss_fn = nn.CrossEntropyLoss()

    def epoch():
        order = torch.randperm(len(x_t))
        correct = 0
        for start in range(0, len(x_t), BATCH):
            idx = order[start:start + BATCH]
            opt.zero_grad()
            logits = model(x_t[idx])
            loss = loss_fn(logits, y_t[idx])
            loss.backward()
            opt.step()
            correct += int((logits.argmax(1) == y_t[idx]).sum())
        return correct / len(x_t)

    t0 = time.perf_counter()
    accuracy = [epoch()]
    first = time.perf_counter() - t0
    times = []
    for _ in range(2 if quick else 5):
        t0 = time.perf_counter()
        accuracy.append(epoch())
        times.append(time.perf_counter() - t0)
    out["cnn"] = {"first": first, "time": statistics.median(times), "check": max(accuracy)}

    xs, ys = lstm_data()
    xs_t, ys_t = torch.from_numpy(xs), torch.from_numpy(ys)
    lstm, head = nn.LSTM(FEATURES, UNITS, batch_first=True), nn.Linear(UNITS, 1)
    opt = torch.optim.Adam(list(lstm.parameters()) + list(head.parameters()), lr=1e-3)

    def lstm_epoch(n):
        last = None
        for start in range(0, n * BATCH, BATCH):
            opt.zero_grad()
            out_seq, _ = lstm(xs_t[start:start + BATCH])
            loss = ((head(out_seq[:, -1]) - ys_t[start:start + BATCH]) ** 2).mean()
            loss.backward()
            opt.step()
            last = float(loss)
        return last

    t0 = time.perf_counter()
    losses = [lstm_epoch(2)]
    first = time.perf_counter() - t0
    times = []
    for _ in range(1 if quick else 3):
        t0 = time.perf_counter()
        losses.append(lstm_epoch(LSTM_STEPS))
        times.append(time.perf_counter() - t0)
    out["lstm"] = {"first": first, "time": min(times) if quick else statistics.median(times),
                   "check": float(losses[-1] < losses[0])}
    return out


def worker(framework, quick, threads):
    if framework == "ember":
        import ember

        if threads:
            ember.config.threading.set_intra_op_parallelism_threads(threads)
        cases, version = keras_cases(ember.keras, quick), ember.__version__
    elif framework == "tensorflow":
        import tensorflow
        import tf_keras

        if threads:
            tensorflow.config.threading.set_intra_op_parallelism_threads(threads)
        cases, version = keras_cases(tf_keras, quick), f"{tensorflow.__version__} (tf_keras {tf_keras.__version__})"
    elif framework == "torch":
        import torch

        torch.set_num_threads(threads or os.cpu_count())
        cases, version = torch_cases(quick), torch.__version__
    else:
        raise ValueError(framework)
    print(json.dumps({"version": version, "cases": cases}))


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--quick", action="store_true")
    parser.add_argument("--threads", type=int, default=0, help="intra-op threads of every framework")
    parser.add_argument("--worker")
    args = parser.parse_args()
    if args.worker:
        worker(args.worker, args.quick, args.threads)
        return
    extra = (["--quick"] if args.quick else []) + ([f"--threads={args.threads}"] if args.threads else [])
    results, lines = run_workers(__file__, ("ember", "tensorflow", "torch"), extra)
    print(f"bench/keras_fit.py: {os.cpu_count()} CPU threads, {args.threads or 'default'} intra-op threads; "
          + ", ".join(f"{fw} {r['version']}" for fw, r in results.items()))
    for line in lines:
        print(line)
    print(f"{'case':<6} {'framework':<11} {'epoch 1 s':>10} {'epoch ms':>9} {'fw/ember':>9}  check")
    for case, what in (("cnn", "digits CNN, one epoch of fit (45 steps)"),
                       ("lstm", "LSTM(128), 100 steps, batch 32: fit for 50 steps")):
        print(f"-- {case}: {what}")
        ember_time = results.get("ember", {}).get("cases", {}).get(case, {}).get("time")
        for fw, r in results.items():
            c = r["cases"].get(case)
            if c is None:
                continue
            ratio = f"{c['time'] / ember_time:8.2f}x" if ember_time else f"{'-':>9}"
            if case == "cnn":
                check = "ok" if c["check"] > 0.9 else "FAIL"
                check += f" (train accuracy {c['check']:.3f})"
            else:
                check = "ok (loss fell)" if c["check"] else "FAIL (loss did not fall)"
            print(f"{case:<6} {fw:<11} {c['first']:10.2f} {c['time'] * 1e3:9.1f} {ratio}  {check}")
    print("fw/ember: the framework's time over ember's (above 1: ember is faster). Targets: cnn >= 2x "
          "tf_keras and > 1x torch; lstm > 1x both")


if __name__ == "__main__":
    main()
