"""TensorArray gather/scatter/split/concat and strings in a loop (issue 15), side by side in one run, one
subprocess per framework:

    EMBER_BENCH_PATH_JAX=/work/jaxenv EMBER_BENCH_PATH_TORCH=/work/torchenv python3 bench/tensor_list.py [--quick]

Workloads:
- gather/scatter: a [1024, 64] array, T = 200 steps known only at run time; each step gathers 16 rows (indices
  of that step, a [T, 16] argument), and scatters ``tanh(rows) * 0.5 + 0.1`` back. ember and TensorFlow: a
  TensorArray loop variable of ``tf.while_loop`` in a ``tf.function`` (TensorListGather and
  TensorListScatterIntoExistingList in both); JAX: ``lax.fori_loop`` under ``jit`` with ``.at[idx].set``;
  PyTorch: eager ``index_copy`` in a Python loop (no graph of TensorArrays to compare with).
- split/concat: a [4096, 64] tensor split into 64 equal pieces with lengths given at run time, then
  concatenated, in a function (JAX and PyTorch: a reshape, their nearest).
- strings: ``tf.while_loop`` of 1000 steps writing ``"row" + str(i)`` into a TensorArray of strings, stacked
  (ember and TensorFlow only: JAX and PyTorch have no string tensors).

Each first result is checked against NumPy, so a fast wrong answer shows as FAIL.
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

ROWS, WIDTH, STEPS, PICK = 1024, 64, 200, 16
SPLIT_ROWS, PIECES = 4096, 64
STRING_STEPS = 1000


def data():
    rng = np.random.default_rng(0)
    x = rng.standard_normal((ROWS, WIDTH)).astype(np.float32)
    idx = np.stack([rng.permutation(ROWS)[:PICK] for _ in range(STEPS)]).astype(np.int32)
    y = rng.standard_normal((SPLIT_ROWS, WIDTH)).astype(np.float32)
    return x, idx, y


def reference(x, idx):
    a = x.copy()
    for t in range(idx.shape[0]):
        a[idx[t]] = np.tanh(a[idx[t]]) * np.float32(0.5) + np.float32(0.1)
    return a


def timed(fn, reps):
    fn()
    times = []
    for _ in range(reps):
        start = time.perf_counter()
        fn()
        times.append(time.perf_counter() - start)
    return statistics.median(times)


def tf_like(tf, reps, x, idx, y):
    @tf.function(input_signature=[tf.TensorSpec([None, WIDTH], tf.float32), tf.TensorSpec([None, PICK], tf.int32)])
    def gather_scatter(x, idx):
        n, steps = tf.shape(x)[0], tf.shape(idx)[0]
        ta = tf.TensorArray(tf.float32, size=n, element_shape=[WIDTH]).unstack(x)

        def body(t, ta):
            rows = ta.gather(idx[t])
            return t + 1, ta.scatter(idx[t], tf.tanh(rows) * 0.5 + 0.1)

        return tf.while_loop(lambda t, ta: t < steps, body, [0, ta])[1].stack()

    @tf.function(input_signature=[tf.TensorSpec([None, WIDTH], tf.float32), tf.TensorSpec([None], tf.int64)])
    def split_concat(y, lengths):
        ta = tf.TensorArray(tf.float32, size=0, dynamic_size=True).split(y, lengths)
        return ta.concat()

    @tf.function(input_signature=[tf.TensorSpec([], tf.int32)])
    def strings(n):
        ta = tf.TensorArray(tf.string, size=n)

        def body(i, ta):
            return i + 1, ta.write(i, tf.strings.join(["row", tf.strings.as_string(i)]))

        return tf.while_loop(lambda i, ta: i < n, body, [0, ta])[1].stack()

    out = {}
    xt, it, yt = tf.constant(x), tf.constant(idx), tf.constant(y)
    lengths = tf.constant([SPLIT_ROWS // PIECES] * PIECES, tf.int64)
    out["gather_scatter_ok"] = bool(np.allclose(gather_scatter(xt, it).numpy(), reference(x, idx), atol=1e-5))
    out["gather_scatter"] = timed(lambda: gather_scatter(xt, it).numpy(), reps)
    out["split_concat_ok"] = bool(np.array_equal(split_concat(yt, lengths).numpy(), y))
    out["split_concat"] = timed(lambda: split_concat(yt, lengths).numpy(), reps)
    got = strings(tf.constant(STRING_STEPS)).numpy()
    out["strings_ok"] = bool(len(got) == STRING_STEPS and got[7] == b"row7" and got[-1] == b"row999")
    out["strings"] = timed(lambda: strings(tf.constant(STRING_STEPS)).numpy(), reps)
    out["version"] = tf.__version__
    return out


def jax_worker(reps, x, idx, y):
    import jax
    import jax.numpy as jnp

    @jax.jit
    def gather_scatter(a, idx):
        def body(t, a):
            return a.at[idx[t]].set(jnp.tanh(a[idx[t]]) * 0.5 + 0.1)

        return jax.lax.fori_loop(0, idx.shape[0], body, a)

    split_concat = jax.jit(lambda y: y.reshape(PIECES, -1, WIDTH).reshape(-1, WIDTH))
    xa, ia, ya = jnp.asarray(x), jnp.asarray(idx), jnp.asarray(y)
    out = {"gather_scatter_ok": bool(np.allclose(np.asarray(gather_scatter(xa, ia)), reference(x, idx), atol=1e-5))}
    out["gather_scatter"] = timed(lambda: gather_scatter(xa, ia).block_until_ready(), reps)
    out["split_concat_ok"] = bool(np.array_equal(np.asarray(split_concat(ya)), y))
    out["split_concat"] = timed(lambda: split_concat(ya).block_until_ready(), reps)
    out["version"] = jax.__version__
    return out


def torch_worker(reps, x, idx, y):
    import torch

    torch.set_num_threads(os.cpu_count())

    def gather_scatter(a, idx):
        a = a.clone()
        for t in range(idx.shape[0]):
            a.index_copy_(0, idx[t], torch.tanh(a.index_select(0, idx[t])) * 0.5 + 0.1)
        return a

    xt, it, yt = torch.from_numpy(x), torch.from_numpy(idx.astype(np.int64)), torch.from_numpy(y)
    out = {"gather_scatter_ok": bool(np.allclose(gather_scatter(xt, it).numpy(), reference(x, idx), atol=1e-5))}
    out["gather_scatter"] = timed(lambda: gather_scatter(xt, it), reps)
    split_concat = lambda y: torch.cat(torch.split(y, SPLIT_ROWS // PIECES))  # noqa: E731
    out["split_concat_ok"] = bool(np.array_equal(split_concat(yt).numpy(), y))
    out["split_concat"] = timed(lambda: split_concat(yt), reps)
    out["version"] = torch.__version__
    return out


def worker(name, quick):
    reps = 5 if quick else 20
    x, idx, y = data()
    if name == "ember":
        import ember as tf

        return tf_like(tf, reps, x, idx, y)
    if name == "tensorflow":
        import tensorflow as tf

        return tf_like(tf, reps, x, idx, y)
    if name == "jax":
        return jax_worker(reps, x, idx, y)
    return torch_worker(reps, x, idx, y)


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--quick", action="store_true")
    parser.add_argument("--worker")
    args = parser.parse_args()
    if args.worker:
        print(json.dumps(worker(args.worker, args.quick)))
        return
    frameworks = ("ember", "tensorflow", "jax", "torch")
    results, notes = run_workers(__file__, frameworks, ["--quick"] if args.quick else [])
    print(f"bench/tensor_list.py: {os.cpu_count()} CPU threads; "
          + ", ".join(f"{fw} {r['version']}" for fw, r in results.items()))
    for line in notes:
        print(line)
    for case in ("gather_scatter", "split_concat", "strings"):
        row = []
        for fw, r in results.items():
            if case in r:
                row.append(f"{fw} {r[case] * 1e3:8.3f} ms{'' if r[case + '_ok'] else ' FAIL'}")
        base = results.get("ember", {}).get(case)
        ratios = [f"{fw}/ember {r[case] / base:.2f}" for fw, r in results.items() if fw != "ember" and case in r]
        print(f"{case:15s} " + " | ".join(row) + ("   (" + ", ".join(ratios) + ")" if base and ratios else ""))


if __name__ == "__main__":
    main()
