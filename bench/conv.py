"""Convolution (issue 17), side by side in one run, one subprocess per framework:

    python3 bench/conv.py [--quick]

Workload: conv2d 3x3, 64 -> 64 channels, 56x56, batch 32, NHWC for ember and TensorFlow (their layout),
NCHW for PyTorch (its layout), SAME padding, float32:
- fwd: the convolution alone;
- fwd+bwd: the convolution, then the gradients of sum(y * dy) w.r.t. the input and the filter (ember and
  TensorFlow: GradientTape in a tf.function, i.e. Conv2D, Conv2DBackpropInput, Conv2DBackpropFilter; PyTorch:
  autograd);
- bwd_data, bwd_filter: one backward pass alone (the gradient of sum(y * dy) w.r.t. the input only, or the
  filter only, given dy: Conv2DBackpropInput or Conv2DBackpropFilter once the unused forward is pruned).
Target (issue 17): ember >= 90% of the throughput of oneDNN's own primitives, forward and backward, and
faster than TensorFlow and PyTorch. oneDNN's figures come from `bench_native_baselines --conv`
(bench/native_baselines.cc, Note [oneDNN convolution baseline]: the primitives on their own blocked layouts,
no reorder timed); the script prints ember / oneDNN throughput when that binary is built.

Each framework's first output is checked against a float64 NumPy convolution of the first image, so a fast
wrong answer shows as FAIL. PyTorch comes from EMBER_BENCH_PATH_TORCH (e.g. /work/torchenv's site-packages).
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
N, H, W, C, K = 32, 56, 56, 64, 64
FLOPS_FWD = 2 * N * H * W * C * K * 9


def data():
    rng = np.random.default_rng(0)
    x = rng.standard_normal((N, H, W, C)).astype(np.float32)
    w = (rng.standard_normal((3, 3, C, K)) / np.sqrt(9 * C)).astype(np.float32)
    dy = rng.standard_normal((N, H, W, K)).astype(np.float32)
    return x, w, dy


def reference_first_image(x, w):
    padded = np.pad(x[0].astype(np.float64), [(1, 1), (1, 1), (0, 0)])
    windows = np.lib.stride_tricks.sliding_window_view(padded, (3, 3), axis=(0, 1))  # [H, W, C, 3, 3]
    return np.einsum("hwcij,ijck->hwk", windows, w.astype(np.float64))


def tf_cases(tf, one_thread=False):
    if one_thread:
        tf.config.threading.set_intra_op_parallelism_threads(1)
        tf.config.threading.set_inter_op_parallelism_threads(1)
    x_np, w_np, dy_np = data()
    x, w, dy = tf.constant(x_np), tf.constant(w_np), tf.constant(dy_np)

    @tf.function
    def fwd(x, w):
        return tf.nn.conv2d(x, w, 1, "SAME")

    @tf.function
    def fwd_bwd(x, w, dy):
        with tf.GradientTape() as tape:
            tape.watch([x, w])
            y = tf.nn.conv2d(x, w, 1, "SAME")
            loss = tf.reduce_sum(y * dy)
        gx, gw = tape.gradient(loss, [x, w])
        return y, gx, gw

    def backward_of(wrt):
        @tf.function
        def bwd(x, w, dy):
            with tf.GradientTape() as tape:
                tape.watch(x if wrt == "x" else w)
                y = tf.nn.conv2d(x, w, 1, "SAME")
            return tape.gradient(y, x if wrt == "x" else w, output_gradients=dy)

        return bwd

    bwd_data, bwd_filter = backward_of("x"), backward_of("w")
    first = fwd(x, w).numpy()[0]
    fwd_bwd(x, w, dy)
    return {"fwd": lambda: fwd(x, w).numpy, "fwd+bwd": lambda: fwd_bwd(x, w, dy)[2].numpy,
            "bwd_data": lambda: bwd_data(x, w, dy).numpy, "bwd_filter": lambda: bwd_filter(x, w, dy).numpy}, first


def torch_cases(one_thread=False):
    import torch

    torch.set_num_threads(1 if one_thread else os.cpu_count())
    x_np, w_np, dy_np = data()
    x = torch.from_numpy(np.ascontiguousarray(x_np.transpose(0, 3, 1, 2))).requires_grad_(True)
    w = torch.from_numpy(np.ascontiguousarray(w_np.transpose(3, 2, 0, 1))).requires_grad_(True)
    dy = torch.from_numpy(np.ascontiguousarray(dy_np.transpose(0, 3, 1, 2)))

    def fwd():
        with torch.no_grad():
            return torch.nn.functional.conv2d(x, w, padding=1)

    def fwd_bwd():
        y = torch.nn.functional.conv2d(x, w, padding=1)
        gx, gw = torch.autograd.grad((y * dy).sum(), [x, w])
        return gw

    def bwd_data():
        y = torch.nn.functional.conv2d(x, w.detach(), padding=1)
        return torch.autograd.grad(y, [x], dy)[0]

    def bwd_filter():
        y = torch.nn.functional.conv2d(x.detach(), w, padding=1)
        return torch.autograd.grad(y, [w], dy)[0]

    first = fwd()[0].permute(1, 2, 0).numpy()
    return {"fwd": fwd, "fwd+bwd": fwd_bwd, "bwd_data": bwd_data, "bwd_filter": bwd_filter}, first


def time_calls(call, seconds):
    for _ in range(2):
        call()
    times, cpu = [], []
    end = time.perf_counter() + seconds
    while time.perf_counter() < end or len(times) < 5:
        t0, c0 = time.perf_counter(), time.process_time()
        result = call()
        if callable(result):
            result()  # TensorFlow/ember: wait for the value
        times.append(time.perf_counter() - t0)
        cpu.append(time.process_time() - c0)
    return statistics.median(times), min(times), min(cpu)


def worker(framework, quick, one_thread):
    if framework == "ember":
        import ember

        (cases, first), version = tf_cases(ember, one_thread), ember.__version__
    elif framework == "tensorflow":
        import tensorflow

        (cases, first), version = tf_cases(tensorflow, one_thread), tensorflow.__version__
    elif framework == "torch":
        import torch

        (cases, first), version = torch_cases(one_thread), torch.__version__
    else:
        raise ValueError(framework)
    x, w, _ = data()
    ref = reference_first_image(x, w)
    err = float(np.max(np.abs(first - ref)) / (1 + np.max(np.abs(ref))))
    out = {"version": version, "error": err, "cases": {}}
    for name, call in cases.items():
        try:
            median, best, cpu = time_calls(call, 2.0 if quick else 6.0)
            out["cases"][name] = {"time": median, "best": best, "cpu": cpu}
        except Exception as e:  # noqa: BLE001 - one failing case must not hide the others
            out["cases"][name] = {"failed": f"{type(e).__name__}: {(str(e).splitlines() or [''])[0][:240]}"}
    print(json.dumps(out))


def onednn_baseline(one_thread):
    """bench_native_baselines --conv's JSON (oneDNN's own primitives), or None when it is not built."""
    import subprocess

    from run import NATIVE_BUILDS

    exe = os.environ.get("EMBER_NATIVE_BASELINES")
    if exe is None:
        exe = next((p for p in (os.path.join(ROOT, b, "bench_native_baselines") for b in NATIVE_BUILDS)
                    if os.path.exists(p)), None)
    if exe is None or not os.path.exists(exe):
        return None
    env = dict(os.environ, OMP_NUM_THREADS="1") if one_thread else None
    return json.loads(subprocess.run([exe, "--conv"], capture_output=True, text=True, check=True, env=env).stdout)


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--quick", action="store_true")
    parser.add_argument("--one-thread", action="store_true",
                        help="every framework and oneDNN on one thread (steadier on a shared machine)")
    parser.add_argument("--worker")
    args = parser.parse_args()
    if args.worker:
        worker(args.worker, args.quick, args.one_thread)
        return
    if args.one_thread:
        os.environ["OMP_NUM_THREADS"] = "1"
    extra = (["--quick"] if args.quick else []) + (["--one-thread"] if args.one_thread else [])
    results, lines = run_workers(__file__, ("ember", "tensorflow", "torch"), extra)
    print(f"bench/conv.py: conv2d 3x3 {C}->{K}, {H}x{W}, batch {N}; "
          f"{1 if args.one_thread else os.cpu_count()} CPU thread(s); load {open('/proc/loadavg').read().split()[0]}; "
          + ", ".join(f"{fw} {r['version']}" for fw, r in results.items()))
    for line in lines:
        print(line)
    print(f"{'case':<8} {'framework':<11} {'ms':>10} {'GFLOP/s':>8} {'vs ember':>9}  check")
    cases = (("fwd", FLOPS_FWD), ("fwd+bwd", 3 * FLOPS_FWD), ("bwd_data", FLOPS_FWD), ("bwd_filter", FLOPS_FWD))
    for case, flops in cases:
        ember_time = results.get("ember", {}).get("cases", {}).get(case, {}).get("time")
        for fw, r in results.items():
            c = r["cases"].get(case)
            if c is None:
                continue
            if "failed" in c:
                print(f"{case:<8} {fw:<11} {'FAILED':>10}  {c['failed']}")
                continue
            ratio = f"{c['time'] / ember_time:8.2f}x" if ember_time else f"{'-':>9}"
            check = "ok" if r["error"] < 1e-4 else f"FAIL (error {r['error']:.2e})"
            print(f"{case:<8} {fw:<11} {c['time'] * 1e3:10.2f} {flops / c['time'] / 1e9:8.1f} {ratio}  {check}")
    native = onednn_baseline(args.one_thread)
    ember_cases = results.get("ember", {}).get("cases", {})
    if native is None:
        print("oneDNN baseline: bench_native_baselines is not built (ninja -C build/dev bench_native_baselines)")
    else:
        print(f"oneDNN {native['threads']} threads: fwd {native['conv_fwd_ms']:.2f} ms ({native['conv_fwd_impl']}), "
              f"bwd_data {native['conv_bwd_data_ms']:.2f} ms ({native['conv_bwd_data_impl']}), bwd_weights "
              f"{native['conv_bwd_weights_ms']:.2f} ms ({native['conv_bwd_weights_impl']})")
        # Best against best: the native binary reports the best of its runs (steadier on a busy machine).
        for case, key in (("fwd", "conv_fwd_ms"), ("bwd_data", "conv_bwd_data_ms"), ("bwd_filter", "conv_bwd_weights_ms")):
            t = ember_cases.get(case, {}).get("best")
            if t:
                print(f"  {case:<10} ember / oneDNN throughput = {native[key] / 1e3 / t:.3f} (target >= 0.9; best runs)")
        # CPU time (process, all threads) against CPU time: steadier when other processes share the cores;
        # with --one-thread every side runs on one thread, the like-for-like figure on a shared machine.
        for case, key in (("fwd", "conv_fwd_cpu_ms"), ("bwd_data", "conv_bwd_data_cpu_ms"),
                          ("bwd_filter", "conv_bwd_weights_cpu_ms")):
            t = ember_cases.get(case, {}).get("cpu")
            if t and key in native:
                print(f"  {case:<10} ember / oneDNN CPU-time throughput = {native[key] / 1e3 / t:.3f}")
        t = ember_cases.get("fwd+bwd", {}).get("best")
        if t:
            total = native["conv_fwd_ms"] + native["conv_bwd_data_ms"] + native["conv_bwd_weights_ms"]
            print(f"  {'fwd+bwd':<10} ember / oneDNN throughput = {total / 1e3 / t:.3f} (ember's also multiplies "
                  "y * dy and sums it)")
    print("targets: ember >= 0.9x oneDNN's primitives called directly, faster than TensorFlow and PyTorch")


if __name__ == "__main__":
    main()
