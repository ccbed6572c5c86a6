"""Checkpoint save and restore (issue 16), one subprocess per framework, on the same disk:

    python3 bench/checkpoint.py [--size-mb 1024] [--dir DIRECTORY] [--repeat 3]

A model of float32 variables totalling --size-mb (16 variables) is saved with ``tf.train.Checkpoint.write``
and restored with ``restore`` (ember and TensorFlow, the same code), and the data file the save wrote is
copied with ``cp`` on the same disk: plain (what `cp` does: the bytes reach the page cache) and followed by
``sync`` of the copy (durable, as ember's save is: it fsyncs both files and the directory before renaming
them into place; TensorFlow's does not fsync). ember writes a checkpoint of more than 128 MiB as one data
shard per intra-op thread, in parallel; cp copies the same files, one after another, as one process does.
The best of --repeat runs counts. Restores read files the
save just wrote, so they come from the page cache for every framework alike.

Targets: ember's save and restore throughput >= 80% of cp's, and >= 2x TensorFlow's. ember's synced save
(the default) is compared with cp + sync and its unsynced save (CheckpointOptions(experimental_sync=False),
TensorFlow's durability) with plain cp; TensorFlow's save never syncs. Note: coreutils 9's
cp copies with copy_file_range, inside the kernel; a save must write() from the process's memory, and on a
shared VM that path's speed swings (1 GiB by a plain Python os.write took 0.5 to 5 s within minutes), so
compare runs only on a quiet machine. Each timed save and copy starts after ``os.sync()``: dirty pages
that an earlier run left (up to the kernel's or the container's dirty limit) would otherwise throttle the
next writer, so whichever ran second paid for the first. A restored model is
compared with the saved values, so a fast wrong answer shows as FAIL.
"""
import argparse
import glob
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
from workers import QUIET_CORES, others_cores_during  # noqa: E402

ROOT = os.path.dirname(HERE)
N_VARIABLES = 16


def worker(framework, size_mb, directory, repeat):
    if framework == "tensorflow":
        os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")
        import tensorflow as tf
    else:
        import ember as tf
    per_variable = size_mb * (1 << 20) // 4 // N_VARIABLES
    rng = np.random.default_rng(0)
    values = [rng.standard_normal(per_variable, dtype=np.float32) for _ in range(N_VARIABLES)]
    model = tf.Module()
    model.layers = [tf.Variable(v) for v in values]
    prefix = os.path.join(directory, f"{framework}_ckpt")
    save_times, restore_times = [], []
    for _ in range(repeat):
        checkpoint = tf.train.Checkpoint(model=model)
        os.sync()  # Note in the docstring: no save starts behind another run's writeback
        start = time.perf_counter()
        checkpoint.write(prefix)
        save_times.append(time.perf_counter() - start)
        target = tf.Module()
        target.layers = [tf.Variable(np.zeros(per_variable, np.float32)) for _ in range(N_VARIABLES)]
        start = time.perf_counter()
        tf.train.Checkpoint(model=target).restore(prefix).expect_partial()
        restore_times.append(time.perf_counter() - start)
    unsynced_times, one_file_times = [], []
    if framework == "ember":  # TensorFlow's durability (no fsync), still atomic: the like of plain `cp`
        options = tf.train.CheckpointOptions(experimental_sync=False)
        for _ in range(repeat):
            os.sync()
            start = time.perf_counter()
            tf.train.Checkpoint(model=model).write(prefix, options=options)
            unsynced_times.append(time.perf_counter() - start)
        # The same on one intra-op thread: one data file, as before parallel shards (Note [Parallel shards])
        threads = tf.config.threading.get_intra_op_parallelism_threads()
        tf.config.threading.set_intra_op_parallelism_threads(1)
        for _ in range(repeat):
            os.sync()
            start = time.perf_counter()
            tf.train.Checkpoint(model=model).write(prefix + "_one", options=options)
            one_file_times.append(time.perf_counter() - start)
        tf.config.threading.set_intra_op_parallelism_threads(threads)
    ok = all(np.array_equal(t.numpy(), v) for t, v in zip(target.layers, values))
    data = sorted(glob.glob(prefix + ".data-?????-of-?????"))  # one file, or several shards (ember)
    print(json.dumps({"version": tf.__version__ if hasattr(tf, "__version__") else "?",
                      "save": min(save_times), "restore": min(restore_times), "ok": bool(ok),
                      **({"save unsynced": min(unsynced_times)} if unsynced_times else {}),
                      **({"save unsynced 1 file": min(one_file_times)} if one_file_times else {}),
                      "bytes": sum(os.path.getsize(f) for f in data), "data_files": data}))


def cp_times(sources, directory, repeat, durable):
    """The best time of one `cp` of every data file into an empty directory (then `sync` of the copies)."""
    best = float("inf")
    target = os.path.join(directory, "cp_copy")
    for _ in range(repeat):
        shutil.rmtree(target, ignore_errors=True)
        os.mkdir(target)
        os.sync()
        start = time.perf_counter()
        subprocess.run(["cp", *sources, target], check=True)
        if durable:
            subprocess.run(["sync", *(os.path.join(target, os.path.basename(f)) for f in sources)], check=True)
        best = min(best, time.perf_counter() - start)
    shutil.rmtree(target, ignore_errors=True)
    return best


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--size-mb", type=int, default=1024)
    parser.add_argument("--dir", default=None, help="where the checkpoints go (default: a temporary directory)")
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--worker")
    args = parser.parse_args()
    directory = args.dir or tempfile.mkdtemp(prefix="ember-bench-checkpoint-")
    if args.worker:
        worker(args.worker, args.size_mb, directory, args.repeat)
        return
    env = dict(os.environ, TF_CPP_MIN_LOG_LEVEL="3",
               PYTHONPATH=os.path.join(ROOT, "python") + os.pathsep + os.environ.get("PYTHONPATH", ""))
    results, lines = {}, []
    try:
        for fw in ("ember", "tensorflow"):
            flags = ["-S"] if sys.flags.no_site else []
            cmd = [sys.executable, *flags, __file__, "--worker", fw, "--size-mb", str(args.size_mb), "--dir",
                   directory, "--repeat", str(args.repeat)]
            proc, others = others_cores_during(lambda: subprocess.run(cmd, capture_output=True, text=True, env=env))
            if proc.returncode != 0:
                why = "not installed" if "ModuleNotFoundError" in proc.stderr else \
                    (proc.stderr.strip().splitlines() or ["?"])[-1]
                lines.append(f"  {fw}: skipped ({why})")
                continue
            results[fw] = json.loads(proc.stdout.strip().splitlines()[-1])
            if others is not None and others > QUIET_CORES:
                lines.append(f"  WARNING: other processes kept {others:.2f} of {os.cpu_count()} cores busy during "
                             f"the {fw} worker; its timings are disturbed")
        sources = (results.get("ember") or results.get("tensorflow") or {}).get("data_files")
        baselines = {}
        if sources:
            (plain, durable), others = others_cores_during(
                lambda: (cp_times(sources, directory, args.repeat, False),
                         cp_times(sources, directory, args.repeat, True)))
            baselines = {"cp": plain, "cp+sync": durable}
            if others is not None and others > QUIET_CORES:
                lines.append(f"  WARNING: other processes kept {others:.2f} cores busy during cp")
    finally:
        if not args.dir:
            shutil.rmtree(directory, ignore_errors=True)
    size = next(iter(results.values()))["bytes"] if results else 0
    print(f"bench/checkpoint.py: {size / (1 << 20):.0f} MiB in {N_VARIABLES} float32 variables, on "
          f"{args.dir or tempfile.gettempdir()}; {os.cpu_count()} CPU threads; "
          + ", ".join(f"{fw} {r['version']}" for fw, r in results.items()))
    for line in lines:
        print(line)
    gib = size / (1 << 30)
    print(f"{'case':<28} {'s':>7} {'GiB/s':>7}")
    for name, seconds in baselines.items():
        print(f"{name:<28} {seconds:7.3f} {gib / seconds:7.2f}")
    for fw, r in results.items():
        for op in ("save", "save unsynced", "save unsynced 1 file", "restore"):
            if op in r:
                print(f"{fw + ' ' + op:<28} {r[op]:7.3f} {gib / r[op]:7.2f}  {'ok' if r['ok'] else 'FAIL'}")
    ember = results.get("ember")
    if ember:
        print("ratios (throughput; > 1 means ember is faster):")
        # Like with like: a synced save against cp + sync, an unsynced one against plain cp.
        pairs = [("save", "cp+sync"), ("save unsynced", "cp"), ("save unsynced 1 file", "cp"), ("restore", "cp")]
        for op, name in pairs:
            if op in ember and name in baselines:
                print(f"  ember {op} vs {name}: {baselines[name] / ember[op]:.2f} (target >= 0.80)")
        if "tensorflow" in results:
            for op in ("save", "save unsynced", "restore"):
                if op in ember:
                    theirs = results["tensorflow"]["save" if op == "save unsynced" else op]
                    print(f"  ember {op} vs TensorFlow: {theirs / ember[op]:.2f} (target >= 2)")


if __name__ == "__main__":
    main()
