"""String tensors (issue 17), ember against TensorFlow, one subprocess per framework:

    python3 bench/strings.py [--quick]

Workloads: 100,000 strings of 5-40 ASCII words characters (10,000 with --quick), eager calls:
- from_numpy / to_numpy: tf.constant of a list of str, and .numpy() of the tensor;
- length, upper, strip, substr(1, 5), regex_replace("[aeiou]+", "_"), regex_full_match("a.*"),
  to_hash_bucket_fast(1000), split(" ") (a RaggedTensor), join([s, s], "-"), reduce_join;
- gather of 100,000 random rows and concat of the tensor with itself (the array ops' string kernels);
- fn: an ember.function / tf.function with a string TensorSpec: upper, split on spaces, to_tensor.
Each result is compared between the frameworks (hash of the outputs) first: a fast wrong answer is FAIL.
Median of repeats, milliseconds; the ratio is TensorFlow's time over ember's (> 1: ember is faster).
"""
import argparse
import hashlib
import json
import os
import statistics
import subprocess
import sys
import time

import numpy as np

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def data(quick):
    rng = np.random.default_rng(0)
    n = 10_000 if quick else 100_000
    letters = np.array(list("abcdefghij klmnopqrst uvwxyz  "))
    lengths = rng.integers(5, 41, n)
    return ["".join(letters[rng.integers(0, len(letters), k)]) for k in lengths], rng.integers(0, n, n)


def digest(value):
    if hasattr(value, "to_list"):
        value = value.to_list()
    elif hasattr(value, "numpy"):
        value = np.asarray(value.numpy()).tolist()
    return hashlib.sha1(repr(value).encode()).hexdigest()[:12]


def worker(framework, quick):
    if framework == "ember":
        sys.path.insert(0, os.path.join(ROOT, "python"))
        import ember as tf
    else:
        os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")
        import tensorflow as tf
    words, rows = data(quick)
    s = tf.constant(words)
    idx = tf.constant(rows)

    @tf.function(input_signature=[tf.TensorSpec([None], tf.string)])
    def fn(x):
        return tf.strings.split(tf.strings.upper(x), " ").to_tensor()

    cases = {
        "from_numpy": lambda: tf.constant(words),
        "to_numpy": lambda: s.numpy(),
        "length": lambda: tf.strings.length(s),
        "upper": lambda: tf.strings.upper(s),
        "strip": lambda: tf.strings.strip(s),
        "substr": lambda: tf.strings.substr(s, 1, 5),
        "regex_replace": lambda: tf.strings.regex_replace(s, "[aeiou]+", "_"),
        "regex_full_match": lambda: tf.strings.regex_full_match(s, "a.*"),
        "to_hash_bucket_fast": lambda: tf.strings.to_hash_bucket_fast(s, 1000),
        "split": lambda: tf.strings.split(s, " "),
        "join": lambda: tf.strings.join([s, s], "-"),
        "reduce_join": lambda: tf.strings.reduce_join(s, separator=","),
        "gather": lambda: tf.gather(s, idx),
        "concat": lambda: tf.concat([s, s], 0),
        "fn": lambda: fn(s),
    }
    out = {}
    for name, case in cases.items():
        result = case()
        check = digest(result) if name != "to_numpy" else digest(np.asarray(result).tolist())
        times = []
        for _ in range(3 if quick else 7):
            start = time.perf_counter()
            case()
            times.append((time.perf_counter() - start) * 1e3)
        out[name] = {"ms": statistics.median(times), "digest": check}
    print(json.dumps(out))


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--quick", action="store_true")
    parser.add_argument("--worker", choices=["ember", "tensorflow"])
    args = parser.parse_args()
    if args.worker:
        return worker(args.worker, args.quick)
    results = {}
    for framework in ("ember", "tensorflow"):
        cmd = [sys.executable] + (["-S"] if sys.flags.no_site else []) + [__file__, "--worker", framework]
        proc = subprocess.run(cmd + (["--quick"] if args.quick else []), capture_output=True, text=True,
                              env=dict(os.environ, PYTHONPATH=os.pathsep.join(p for p in sys.path if p)))
        if proc.returncode != 0:
            print(proc.stderr[-2000:])
            return 1
        results[framework] = json.loads(proc.stdout.strip().splitlines()[-1])
    print(f"{'workload':22s} {'ember ms':>10s} {'TF ms':>10s} {'TF/ember':>9s}")
    for name, ours in results["ember"].items():
        theirs = results["tensorflow"][name]
        same = ours["digest"] == theirs["digest"]
        print(f"{name:22s} {ours['ms']:10.2f} {theirs['ms']:10.2f} {theirs['ms'] / ours['ms']:9.2f}"
              f"{'' if same else '  FAIL (results differ)'}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
