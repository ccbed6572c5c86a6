"""FFTs (issue 17, complex numbers), side by side in one run, one subprocess per framework:

    python3 bench/fft.py [--quick]

Workloads:
- rfft 1M: ``tf.signal.rfft`` of 1,048,576 random float32 values. NumPy: ``np.fft.rfft`` (pocketfft, computes
  in float64 and returns complex128); PyTorch: ``torch.fft.rfft``.
- fft2d 512x512: ``tf.signal.fft2d`` of a 512 x 512 complex64 matrix. NumPy: ``np.fft.fft2``; PyTorch:
  ``torch.fft.fft2``.
Eager calls in every framework (the ops themselves). ember runs FFTW (Debian's libfftw3, FFTW_ESTIMATE plans
cached per shape). Each first result is checked against NumPy's, so a fast wrong answer shows as FAIL.
PyTorch comes from EMBER_BENCH_PATH_TORCH where it is installed apart (e.g. /work/torchenv).
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

CASES = ("rfft 1M", "fft2d 512x512")


def data(quick):
    rng = np.random.default_rng(0)
    n, side = (1 << 17, 256) if quick else (1 << 20, 512)
    signal = rng.standard_normal(n).astype(np.float32)
    image = (rng.standard_normal((side, side)) + 1j * rng.standard_normal((side, side))).astype(np.complex64)
    return signal, image


def check(name, got, signal, image):
    expected = np.fft.rfft(signal) if name == "rfft 1M" else np.fft.fft2(image)
    scale = np.abs(expected).max()
    return bool(np.allclose(got, expected, rtol=0, atol=1e-4 * scale))


def tf_cases(tf, signal, image):
    x, m = tf.constant(signal), tf.constant(image)
    return {"rfft 1M": lambda: tf.signal.rfft(x).numpy(), "fft2d 512x512": lambda: tf.signal.fft2d(m).numpy()}


def torch_cases(signal, image):
    import torch

    torch.set_num_threads(os.cpu_count())
    x, m = torch.from_numpy(signal), torch.from_numpy(image)
    return {"rfft 1M": lambda: torch.fft.rfft(x).numpy(), "fft2d 512x512": lambda: torch.fft.fft2(m).numpy()}


def numpy_cases(signal, image):
    return {"rfft 1M": lambda: np.fft.rfft(signal), "fft2d 512x512": lambda: np.fft.fft2(image)}


def time_calls(call, seconds):
    call()
    times = []
    end = time.perf_counter() + seconds
    while time.perf_counter() < end or len(times) < 5:
        t0 = time.perf_counter()
        call()
        times.append(time.perf_counter() - t0)
    return statistics.median(times)


def worker(framework, quick):
    signal, image = data(quick)
    if framework == "ember":
        import ember

        cases, version = tf_cases(ember, signal, image), ember.__version__
    elif framework == "tensorflow":
        import tensorflow

        cases, version = tf_cases(tensorflow, signal, image), tensorflow.__version__
    elif framework == "torch":
        import torch

        cases, version = torch_cases(signal, image), torch.__version__
    elif framework == "numpy":
        cases, version = numpy_cases(signal, image), np.__version__
    else:
        raise ValueError(framework)
    out = {"version": version, "cases": {}}
    for name, call in cases.items():
        try:
            ok = check(name, call(), signal, image)
            out["cases"][name] = {"time": time_calls(call, 1.0 if quick else 3.0), "ok": ok}
        except Exception as e:  # noqa: BLE001 - one failing case must not hide the others
            out["cases"][name] = {"failed": f"{type(e).__name__}: {(str(e).splitlines() or [''])[0][:240]}"}
    print(json.dumps(out))


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--quick", action="store_true", help="an eighth of the rfft, a quarter of the fft2d")
    parser.add_argument("--worker")
    args = parser.parse_args()
    if args.worker:
        worker(args.worker, args.quick)
        return
    results, lines = run_workers(__file__, ("ember", "tensorflow", "torch", "numpy"),
                                 ["--quick"] if args.quick else [])
    print(f"bench/fft.py{' --quick' if args.quick else ''}: {os.cpu_count()} CPU threads; "
          + ", ".join(f"{fw} {r['version']}" for fw, r in results.items()))
    for line in lines:
        print(line)
    print(f"{'case':<14} {'framework':<11} {'ms':>10} {'vs ember':>9}  check")
    for case in CASES:
        ember_time = results.get("ember", {}).get("cases", {}).get(case, {}).get("time")
        for fw, r in results.items():
            c = r["cases"].get(case)
            if c is None:
                continue
            if "failed" in c:
                print(f"{case:<14} {fw:<11} {'FAILED':>10}  {c['failed']}")
                continue
            ratio = f"{c['time'] / ember_time:8.2f}x" if ember_time else f"{'-':>9}"
            print(f"{case:<14} {fw:<11} {c['time'] * 1e3:10.2f} {ratio}  {'ok' if c['ok'] else 'FAIL'}")


if __name__ == "__main__":
    main()
