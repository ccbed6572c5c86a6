"""Sorting and selection (issue 17), side by side in one run, one subprocess per framework:

    python3 bench/sort.py [--quick]

Workloads:
- sort 16M: ``tf.sort`` of 16,777,216 random float32 values (ascending). PyTorch: ``torch.sort``.
- top_k 1Mx100: ``tf.math.top_k(x, k=10)`` over each row of a [1,000,000, 100] float32 matrix. PyTorch:
  ``torch.topk(x, 10)``.
Eager calls in every framework (the ops themselves, no function around them). Target (issue 17): ember
faster than PyTorch and TensorFlow on both.

Each first result is checked against NumPy (np.sort; the sorted k largest of each row), so a fast wrong answer
shows as FAIL. PyTorch comes from EMBER_BENCH_PATH_TORCH where it is installed apart (e.g. /work/torchenv's
site-packages).
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

ROOT = os.path.dirname(HERE)
SORT_N = 1 << 24
ROWS, COLS, K = 1_000_000, 100, 10
CASES = ("sort 16M", "top_k 1Mx100")


def data(quick):
    rng = np.random.default_rng(0)
    n = SORT_N // 8 if quick else SORT_N
    rows = ROWS // 8 if quick else ROWS
    return rng.standard_normal(n).astype(np.float32), rng.standard_normal((rows, COLS)).astype(np.float32)


def check(name, got, vec, mat):
    if name == "sort 16M":
        return bool(np.array_equal(got, np.sort(vec)))
    expected = -np.sort(-mat, axis=1)[:, :K]
    return bool(np.array_equal(got, expected))


def tf_cases(tf, vec, mat):
    x, m = tf.constant(vec), tf.constant(mat)
    return {"sort 16M": lambda: tf.sort(x).numpy(), "top_k 1Mx100": lambda: tf.math.top_k(m, k=K).values.numpy()}


def torch_cases(vec, mat):
    import torch

    torch.set_num_threads(os.cpu_count())
    x, m = torch.from_numpy(vec), torch.from_numpy(mat)
    return {"sort 16M": lambda: torch.sort(x).values.numpy(),
            "top_k 1Mx100": lambda: torch.topk(m, K, dim=1).values.numpy()}


def time_calls(call, seconds):
    call()
    times = []
    end = time.perf_counter() + seconds
    while time.perf_counter() < end or len(times) < 3:
        t0 = time.perf_counter()
        call()
        times.append(time.perf_counter() - t0)
    return statistics.median(times)


def worker(framework, quick):
    vec, mat = data(quick)
    if framework == "ember":
        import ember

        cases, version = tf_cases(ember, vec, mat), ember.__version__
    elif framework == "tensorflow":
        import tensorflow

        cases, version = tf_cases(tensorflow, vec, mat), tensorflow.__version__
    elif framework == "torch":
        import torch

        cases, version = torch_cases(vec, mat), torch.__version__
    else:
        raise ValueError(framework)
    out = {"version": version, "cases": {}}
    for name, call in cases.items():
        try:
            ok = check(name, call(), vec, mat)
            out["cases"][name] = {"time": time_calls(call, 1.0 if quick else 3.0), "ok": ok}
        except Exception as e:  # noqa: BLE001 - one failing case must not hide the others
            out["cases"][name] = {"failed": f"{type(e).__name__}: {(str(e).splitlines() or [''])[0][:240]}"}
    print(json.dumps(out))


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--quick", action="store_true", help="an eighth of the sizes")
    parser.add_argument("--worker")
    args = parser.parse_args()
    if args.worker:
        worker(args.worker, args.quick)
        return
    results, lines = run_workers(__file__, ("ember", "tensorflow", "torch"), ["--quick"] if args.quick else [])
    print(f"bench/sort.py{' --quick' if args.quick else ''}: {os.cpu_count()} CPU threads; "
          + ", ".join(f"{fw} {r['version']}" for fw, r in results.items()))
    for line in lines:
        print(line)
    print(f"{'case':<13} {'framework':<11} {'ms':>10} {'vs ember':>9}  check")
    for case in CASES:
        ember_time = results.get("ember", {}).get("cases", {}).get(case, {}).get("time")
        for fw, r in results.items():
            c = r["cases"].get(case)
            if c is None:
                continue
            if "failed" in c:
                print(f"{case:<13} {fw:<11} {'FAILED':>10}  {c['failed']}")
                continue
            ratio = f"{c['time'] / ember_time:8.2f}x" if ember_time else f"{'-':>9}"
            print(f"{case:<13} {fw:<11} {c['time'] * 1e3:10.1f} {ratio}  {'ok' if c['ok'] else 'FAIL'}")
    print("target: TensorFlow/ember > 1 and torch/ember > 1 on both")


if __name__ == "__main__":
    main()
