"""Composite tensors (issue 17), ember against TensorFlow, one subprocess per framework:

    python3 bench/composite.py [--quick]

Workloads (eager calls, float32):
- spmm: tf.sparse.sparse_dense_matmul of a 4096 x 4096 SparseTensor with 1% non-zeros (167,772) by a dense
  4096 x 64 matrix.
- spmm grad: the same product's gradient w.r.t. the sparse values and the dense matrix (GradientTape).
- ragged sum: tf.reduce_sum(rt, axis=1) of a RaggedTensor of 20,000 rows, lengths 0..99.
- ragged to_tensor: rt.to_tensor() of the same.
- ragged fn: an ember.function / tf.function taking the RaggedTensor, returning reduce_mean over rows of rt * 2.
Each result is checked against NumPy first (FAIL shows a fast wrong answer). Median of repeats, milliseconds.
"""
import argparse
import json
import os
import statistics
import subprocess
import sys
import time

import numpy as np

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def inputs(quick):
    rng = np.random.default_rng(0)
    n = 1024 if quick else 4096
    nnz = n * n // 100
    flat = np.sort(rng.choice(n * n, nnz, replace=False))
    indices = np.stack([flat // n, flat % n], 1).astype(np.int64)
    values = rng.standard_normal(nnz).astype(np.float32)
    dense = rng.standard_normal((n, 64)).astype(np.float32)
    lengths = rng.integers(0, 100, 5000 if quick else 20000)
    flat_values = rng.standard_normal(int(lengths.sum())).astype(np.float32)
    return n, indices, values, dense, lengths, flat_values


def worker(framework, quick):
    if framework == "ember":
        sys.path.insert(0, os.path.join(ROOT, "python"))
        import ember as tf
    else:
        import tensorflow as tf
    n, indices, values, dense, lengths, flat_values = inputs(quick)
    sp = tf.sparse.SparseTensor(tf.constant(indices), tf.constant(values), [n, n])
    b = tf.constant(dense)
    rt = tf.RaggedTensor.from_row_lengths(tf.constant(flat_values), tf.constant(lengths, tf.int64))
    splits = np.concatenate([[0], np.cumsum(lengths)])

    def spmm_grad():
        vals = tf.constant(values)
        with tf.GradientTape() as tape:
            tape.watch(vals)
            tape.watch(b)
            y = tf.reduce_sum(tf.sparse.sparse_dense_matmul(tf.sparse.SparseTensor(sp.indices, vals, [n, n]), b))
        return tape.gradient(y, [vals, b])

    fn = tf.function(lambda r: tf.reduce_mean(r * 2.0, axis=1))
    ref_spmm = np.zeros((n, 64), np.float32)
    np.add.at(ref_spmm, indices[:, 0], values[:, None] * dense[indices[:, 1]])
    ref_sum = np.add.reduceat(np.append(flat_values, 0), splits[:-1])
    ref_sum[lengths == 0] = 0
    checks = {
        "spmm": (lambda: tf.sparse.sparse_dense_matmul(sp, b), lambda r: np.allclose(r.numpy(), ref_spmm, atol=1e-3)),
        "spmm grad": (spmm_grad, lambda r: np.allclose(r[0].numpy(), dense[indices[:, 1]].sum(1), atol=1e-3)),
        "ragged sum": (lambda: tf.reduce_sum(rt, axis=1), lambda r: np.allclose(r.numpy(), ref_sum, atol=1e-3)),
        "ragged to_tensor": (lambda: rt.to_tensor(),
                             lambda r: r.shape[0] == len(lengths) and np.isclose(r.numpy().sum(), flat_values.sum(),
                                                                                 rtol=1e-3)),
        "ragged fn": (lambda: fn(rt), lambda r: np.allclose(r.numpy()[lengths > 0],
                                                            2 * ref_sum[lengths > 0] / lengths[lengths > 0],
                                                            atol=1e-3)),
    }
    out = {}
    for name, (run, check) in checks.items():
        ok = check(run())
        times = []
        for _ in range(5 if quick else 15):
            t0 = time.perf_counter()
            r = run()
            (r[0] if isinstance(r, list) else r).numpy()
            times.append((time.perf_counter() - t0) * 1e3)
        out[name] = {"ms": statistics.median(times), "ok": bool(ok)}
    print(json.dumps(out))


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--quick", action="store_true")
    parser.add_argument("--worker")
    args = parser.parse_args()
    if args.worker:
        worker(args.worker, args.quick)
        return
    results = {}
    for framework in ("ember", "tensorflow"):
        # -S as the parent ran (a worktree's python/ ahead of an editable install of another checkout)
        cmd = [sys.executable] + (["-S"] if sys.flags.no_site else [])
        cmd += [os.path.abspath(__file__), "--worker", framework] + (["--quick"] if args.quick else [])
        proc = subprocess.run(cmd, capture_output=True, text=True, env={**os.environ, "TF_CPP_MIN_LOG_LEVEL": "3"})
        lines = [l for l in proc.stdout.splitlines() if l.startswith("{")]
        if proc.returncode or not lines:
            print(f"{framework} failed:\n{proc.stderr[-2000:]}")
            return 1
        results[framework] = json.loads(lines[-1])
    print(f"{'case':18s} {'ember ms':>10s} {'TF ms':>10s} {'TF/ember':>9s}")
    for name, e in results["ember"].items():
        t = results["tensorflow"][name]
        flag = "" if e["ok"] and t["ok"] else "  FAIL"
        print(f"{name:18s} {e['ms']:10.2f} {t['ms']:10.2f} {t['ms'] / e['ms']:9.2f}{flag}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
