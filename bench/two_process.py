"""Two ember processes side by side on one small machine (issue 20, threads under load):

    python3 bench/two_process.py [--quick] [--workloads mlp,tiny,lstm] [--env NAME=VALUE ...]

Each workload runs first alone (one process), then as two identical processes started together; each prints
its throughput and the ratio pair/solo is printed per process. Sharing two cores, each of two processes
should keep about half of what it had alone: the target is at least 45% each, and no collapse (OpenMP
workers that spin, or a parallel region waiting for a descheduled thread, used to make a 15 µs call take
0.6-2 ms and an LSTM step 20x longer).

Workloads:
- mlp: the MLP training step of bench/autodiff.py (784-256-256-10, SGD, batch 64) as one ember.function,
  steps per second.
- tiny: a 64x64 float32 fused element-wise chain as one ember.function, calls per second (the size that
  must never go parallel).
- lstm: the LSTM training step of bench/control_flow.py (100 steps, forward, backward, Adam), steps/s.

The solo and pair runs of a workload follow each other in the same run, so the ratio compares like with
like, but other processes on the machine disturb both: the cores they kept busy are printed beside each
phase, and numbers from a busy machine are noisy. ``--env`` sets variables in the workers (to compare
OpenMP wait policies: ``--env OMP_WAIT_POLICY=active``; ``--env EMBER_BENCH_ASSUME_QUIET=1`` makes ember use
every core whatever other processes do, to see what the adaptive thread count saves).
"""
import argparse
import json
import os
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
from workers import cpu_seconds, worker_env  # noqa: E402

WORKLOADS = ("mlp", "tiny", "lstm")
UNITS = {"mlp": "steps/s", "tiny": "calls/s", "lstm": "steps/s"}


def mlp_call(tf):
    import numpy as np
    from autodiff import mlp_params, mlp_tf_style

    rng = np.random.default_rng(0)
    x = tf.constant(rng.standard_normal((64, 784)).astype(np.float32))
    y = tf.constant(rng.integers(0, 10, 64).astype(np.int32))
    step = mlp_tf_style(tf, mlp_params(np.random.default_rng(2)), True)
    return lambda: step(x, y).numpy()


def tiny_call(tf):
    x = tf.random.uniform([64, 64])

    @tf.function
    def chain(a):
        return tf.tanh(a * 2.0 + 1.0) * a - 0.5

    return lambda: chain(x).numpy()


def lstm_call(tf):
    from control_flow import tf_cases

    call, _ = tf_cases(tf)["lstm step"]()
    return lambda: call().numpy()


def worker(name, seconds):
    import ember as tf

    if os.environ.get("EMBER_BENCH_ASSUME_QUIET") == "1":
        # As if the machine were otherwise idle: ember uses every core whatever others do (to compare the
        # thread policy's solo speed on a machine that is not quiet).
        tf._C.force_other_processes_load(0.0)
    call = {"mlp": mlp_call, "tiny": tiny_call, "lstm": lstm_call}[name](tf)
    for _ in range(3):
        call()
    # Both processes of a pair start measuring together, after their imports and traces.
    print("ready", flush=True)
    sys.stdin.readline()
    calls, start, cpu = 0, time.perf_counter(), time.process_time()
    while time.perf_counter() - start < seconds:
        call()
        calls += 1
    elapsed = time.perf_counter() - start
    print(json.dumps({"per_s": calls / elapsed, "calls": calls, "cpu_s": time.process_time() - cpu}),
          flush=True)


def run_processes(name, count, seconds, env):
    flags = ["-S"] if sys.flags.no_site else []
    cmd = [sys.executable, *flags, os.path.abspath(__file__), "--worker", name, "--seconds", str(seconds)]
    procs = [subprocess.Popen(cmd, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                              text=True, env=env) for _ in range(count)]
    for p in procs:
        if p.stdout.readline().strip() != "ready":
            p.wait()
            raise RuntimeError(f"{name} worker failed: {p.stderr.read().strip().splitlines()[-1:]}")
    # Other processes' load is measured over the timed window only: the machine's busy CPU time minus what
    # the workers report they used in it (None off Linux).
    before, t0 = cpu_seconds(), time.perf_counter()
    for p in procs:
        p.stdin.write("go\n")
        p.stdin.flush()
    outs = [p.communicate() for p in procs]
    after, wall = cpu_seconds(), time.perf_counter() - t0
    for p, (out, err) in zip(procs, outs):
        if p.returncode != 0:
            raise RuntimeError(f"{name} worker failed: {err.strip().splitlines()[-1:]}")
    results = [json.loads(out.strip().splitlines()[-1]) for out, _ in outs]
    others = None
    if before and after:
        others = max(0.0, (after[0] - before[0] - sum(r["cpu_s"] for r in results)) / wall)
    return [r["per_s"] for r in results], others


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--quick", action="store_true")
    parser.add_argument("--workloads", default=",".join(WORKLOADS))
    parser.add_argument("--env", action="append", default=[], help="NAME=VALUE for the workers")
    parser.add_argument("--worker")
    parser.add_argument("--seconds", type=float)
    args = parser.parse_args()
    if args.worker:
        worker(args.worker, args.seconds)
        return
    env = worker_env()
    for item in args.env:
        key, _, value = item.partition("=")
        env[key] = value
    seconds = 3.0 if args.quick else 10.0
    print(f"two ember processes side by side, {os.cpu_count()} cores, {seconds:g} s per phase"
          + (f", env {' '.join(args.env)}" if args.env else ""))
    worst = {}
    for name in args.workloads.split(","):
        (solo,), busy_solo = run_processes(name, 1, seconds, env)
        pair, busy_pair = run_processes(name, 2, seconds, env)
        ratios = [p / solo for p in pair]
        worst[name] = min(ratios)
        unit = UNITS[name]
        note = lambda busy: "" if busy is None else f" (others kept {busy:.2f} cores busy)"  # noqa: E731
        print(f"{name:5s} solo {solo:10.1f} {unit}{note(busy_solo)}")
        print(f"{name:5s} pair " + " / ".join(f"{p:.1f}" for p in pair) + f" {unit}{note(busy_pair)}")
        print(f"{name:5s} pair/solo " + " / ".join(f"{r:.2f}" for r in ratios)
              + f"   {'ok' if min(ratios) >= 0.45 else 'BELOW 0.45'}")
    print("worst pair/solo: " + ", ".join(f"{k} {v:.2f}" for k, v in worst.items()))


if __name__ == "__main__":
    main()
