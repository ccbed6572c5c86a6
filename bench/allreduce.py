"""All-reduce across 2 worker processes over loopback (issue 19): ember's collective op against Gloo's own
all-reduce called directly from C++ (bench/native/allreduce_gloo.cc, built by CMake as
bench_allreduce_gloo when libgloo-dev is present).

    python3 bench/allreduce.py [--iters 20] [--build-dir build/dev]

Sizes: 1 MiB and 64 MiB of float32, sum. Each side joins a fresh group through Gloo's FileStore, warms up
twice, then reports the median of `--iters` all-reduces on rank 0. ember's time is one eager call of
ember.distribute.experimental.collective.all_reduce (CollectiveReduceV2: the input copied to a staging
buffer, Gloo's ring all-reduce there, the result copied out), twice: with the same instance key every call
(a function's collective node every step: its size agreed on the first call only) and with a fresh key
each call (eager code: a size round trip first, Note [Agreed once per tag]); target: within 1.2x of Gloo's. The machine is shared: the
cores other processes kept busy are printed, and numbers from a busy machine are noisy.
"""
import argparse
import json
import os
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
from workers import ROOT, others_cores_during, worker_env  # noqa: E402

SIZES = (1 << 20, 64 << 20)


def ember_worker(rank, iters, store):
    import numpy as np
    import ember as tf
    from ember.distribute.experimental import collective

    os.environ["TF_CONFIG"] = json.dumps({"cluster": {"worker": ["localhost:0", "localhost:1"]},
                                          "task": {"type": "worker", "index": rank}})
    collective.initialize(timeout_seconds=120, store_path=store)
    out = {}
    for k, nbytes in enumerate(SIZES):
        x = tf.constant(np.ones(nbytes // 4, np.float32))
        # fresh: a new instance key each call (eager code); same: one instance called again, as a function's
        # collective node is every step (its size agreed once: Note [Agreed once per tag])
        for variant, key in (("fresh", None), ("same", 1000 + k)):
            times = []
            for i in range(iters + 2):
                collective.barrier()
                start = time.perf_counter()
                y = collective.all_reduce(x, "sum", instance_key=key)
                elapsed = time.perf_counter() - start
                if i >= 2:
                    times.append(elapsed)
            assert float(y.numpy()[0]) == 2.0
            out[f"{variant} {nbytes}"] = sorted(times)[len(times) // 2]
    if rank == 0:
        print(json.dumps(out))


def run_pair(cmd_of_rank):
    procs = [subprocess.Popen(cmd_of_rank(r), stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                              env=worker_env()) for r in (1, 0)]
    try:
        outs = [p.communicate(timeout=600) for p in procs]
    finally:
        for p in procs:
            if p.poll() is None:
                p.kill()
    for p, (out, err) in zip(procs, outs):
        if p.returncode != 0:
            raise SystemExit(f"a worker failed ({p.returncode}):\n{out}\n{err}")
    return outs[1][0]


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--iters", type=int, default=20)
    parser.add_argument("--repeat", type=int, default=3,
                        help="pairs of runs, alternating gloo and ember; the best median of each is kept")
    parser.add_argument("--build-dir", default=os.path.join(ROOT, "build", "dev"))
    parser.add_argument("--worker", type=int, default=None)
    parser.add_argument("--store", default=None)
    args = parser.parse_args()
    if args.worker is not None:
        ember_worker(args.worker, args.iters, args.store)
        return
    native = os.path.join(args.build_dir, "bench_allreduce_gloo")
    if not os.path.exists(native):
        raise SystemExit(f"{native} is missing: build it with ninja -C {args.build_dir} bench_allreduce_gloo")
    flags = ["-S"] if sys.flags.no_site else []
    gloo, ember, gloo_others, ember_others = {}, {}, 0.0, 0.0
    for i in range(args.repeat):
        with tempfile.TemporaryDirectory() as tmp:
            os.makedirs(os.path.join(tmp, "gloo"))
            out, others = others_cores_during(lambda: run_pair(
                lambda r: [native, str(r), "2", os.path.join(tmp, "gloo"), str(args.iters)]))
            gloo_others = max(gloo_others, others or 0.0)
            for line in out.splitlines():
                if line.startswith("gloo"):
                    nbytes, seconds = int(line.split()[1]), float(line.split()[2])
                    gloo[nbytes] = min(gloo.get(nbytes, seconds), seconds)
            out, others = others_cores_during(lambda: run_pair(
                lambda r: [sys.executable, *flags, __file__, "--worker", str(r), "--iters", str(args.iters),
                           "--store", os.path.join(tmp, "ember")]))
            ember_others = max(ember_others, others or 0.0)
            for k, seconds in json.loads(out.strip().splitlines()[-1]).items():
                ember[k] = min(ember.get(k, seconds), seconds)
    print(f"all-reduce (sum, float32) across 2 processes over loopback, Gloo ring: best of {args.repeat} "
          f"alternating runs of the median of {args.iters}")
    print(f"{'size':>8} {'gloo (C++)':>12} {'ember, same instance':>21} {'ratio':>7} {'ember, fresh key':>17} "
          f"{'ratio':>7}")
    for nbytes in SIZES:
        same, fresh = ember[f"same {nbytes}"], ember[f"fresh {nbytes}"]
        print(f"{nbytes >> 20:>5} MiB {gloo[nbytes] * 1e3:>9.3f} ms {same * 1e3:>18.3f} ms {same / gloo[nbytes]:>6.2f}x "
              f"{fresh * 1e3:>14.3f} ms {fresh / gloo[nbytes]:>6.2f}x")
    for name, others in (("gloo", gloo_others), ("ember", ember_others)):
        if others > 0.1:
            print(f"  WARNING: other processes kept {others:.2f} of {os.cpu_count()} cores busy during the {name} "
                  f"run; its timings are disturbed")


if __name__ == "__main__":
    main()
