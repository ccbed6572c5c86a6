"""Data-parallel training across worker processes (issue 19, MultiWorkerMirroredStrategy on Gloo).

Each test launches real worker processes on this machine over loopback, each with its TF_CONFIG, and bounds
them: every process has a deadline and all are killed when a test fails. Training on 2 and 4 workers must
end with the weights one process reaches on the global batch; a worker killed mid-step must make the others
raise a clear ember.errors exception within the configured timeout instead of hanging."""
import json
import os
import signal
import socket
import subprocess
import sys
import textwrap
import time

import numpy as np
import pytest

import ember as tf

DEADLINE_SECONDS = 150  # a whole launch; CI's two cores run four workers side by side

# The model, its data and its initial weights: shared by the workers and the one-process reference.
COMMON = textwrap.dedent(r'''
    import numpy as np
    import ember as tf

    steps, lr, global_batch = 5, 0.1, 16

    def data(step, n):
        rng = np.random.default_rng(100 + step)
        return rng.standard_normal((n, 8)).astype(np.float32), rng.integers(0, 4, n).astype(np.int32)

    def init():
        rng = np.random.default_rng(7)
        return [tf.Variable(rng.standard_normal(s).astype(np.float32) * 0.3)
                for s in [(8, 16), (16,), (16, 4), (4,)]]

    def loss_fn(w, x, y):
        h = tf.nn.relu(tf.matmul(x, w[0]) + w[1])
        logits = tf.matmul(h, w[2]) + w[3]
        return tf.reduce_mean(tf.nn.sparse_softmax_cross_entropy_with_logits(labels=y, logits=logits))
''')

WORKER = COMMON + textwrap.dedent(r'''
    import os, sys, json, time
    import ember.distribute
    from ember.distribute.experimental import collective

    mode, out_dir = sys.argv[1], sys.argv[2]
    rank = json.loads(os.environ["TF_CONFIG"])["task"]["index"]

    if mode == "mismatch":
        collective.initialize(timeout_seconds=30)
        try:
            collective.all_reduce(tf.ones([4 + rank]), "sum")
        except tf.errors.InvalidArgumentError as e:
            print(f"WORKER-ERROR {type(e).__name__}: {e}", flush=True)
        # nothing was exchanged: the group still works
        assert float(collective.all_reduce(tf.constant(1.0), "sum")) == 2.0
        w = []
    elif mode in ("eager", "function", "kill", "hang"):
        timeout = float(os.environ.get("WORKER_TIMEOUT", "60"))
        r, n = collective.initialize(timeout_seconds=timeout)
        assert r == rank, (r, rank)
        w = init()

        def step(x, y):
            with tf.GradientTape() as tape:
                loss = loss_fn(w, x, y)
            grads = tape.gradient(loss, w)
            for g, v in zip(grads, w):
                v.assign_sub(lr * collective.all_reduce(g, "mean"))
            return loss

        if mode == "function":
            step = tf.function(step)
        b = global_batch // n
        for s in range(steps):
            x, y = data(s, global_batch)
            if mode in ("kill", "hang") and s == 2 and rank == n - 1:
                print("WORKER-DYING", flush=True)
                if mode == "kill":
                    os.kill(os.getpid(), 9)
                time.sleep(3600)
            start = time.monotonic()
            try:
                step(tf.constant(x[rank * b:(rank + 1) * b]), tf.constant(y[rank * b:(rank + 1) * b]))
            except tf.errors.OpError as e:
                print(f"WORKER-ERROR {type(e).__name__} after {time.monotonic() - start:.2f}s: {e}", flush=True)
                sys.exit(3)
    elif mode.startswith("strategy"):
        options = tf.distribute.experimental.CommunicationOptions(timeout_seconds=60)
        strategy = tf.distribute.MultiWorkerMirroredStrategy(communication_options=options)
        n = strategy.num_replicas_in_sync
        with strategy.scope():
            w = init()
            opt = tf.keras.optimizers.Adam(learning_rate=lr) if mode == "strategy_adam" else \
                tf.keras.optimizers.SGD(learning_rate=lr)

        @tf.function
        def train_step(x, y):
            def replica_step(x, y):
                with tf.GradientTape() as tape:
                    # each replica's loss is scaled by its share of the global batch, as Keras does
                    loss = loss_fn(w, x, y) / n
                opt.apply_gradients(zip(tape.gradient(loss, w), w))  # all-reduces the gradients
                return loss
            per_replica = strategy.run(replica_step, args=(x, y))
            return strategy.reduce(tf.distribute.ReduceOp.SUM, per_replica, axis=None)

        # the global batches of every step; the distributed dataset gives this worker its rows of each
        parts = [data(s, global_batch) for s in range(steps)]
        dataset = tf.data.Dataset.from_tensor_slices((np.concatenate([p[0] for p in parts]),
                                                      np.concatenate([p[1] for p in parts]))).batch(global_batch)
        b = global_batch // n
        for s, (x, y) in enumerate(strategy.experimental_distribute_dataset(dataset)):
            np.testing.assert_array_equal(strategy.experimental_local_results(x)[0].numpy(),
                                          parts[s][0][rank * b:(rank + 1) * b])
            train_step(x, y)
    np.savez(os.path.join(out_dir, f"weights{rank}.npz"), *[v.numpy() for v in w])
    print("WORKER-DONE", flush=True)
''')


def reference_weights(optimizer=None):
    """The same MLP trained in this process on the whole global batch: what every worker must end with."""
    helpers = {}
    exec(COMMON, helpers)  # noqa: S102 - the workers' own definitions
    w = helpers["init"]()
    for s in range(helpers["steps"]):
        x, y = helpers["data"](s, helpers["global_batch"])
        with tf.GradientTape() as tape:
            loss = helpers["loss_fn"](w, tf.constant(x), tf.constant(y))
        grads = tape.gradient(loss, w)
        if optimizer is not None:
            optimizer.apply_gradients(zip(grads, w))
            continue
        for g, v in zip(grads, w):
            v.assign_sub(helpers["lr"] * g)
    return [v.numpy() for v in w]


def free_ports(n):
    sockets = [socket.socket() for _ in range(n)]
    for s in sockets:
        s.bind(("127.0.0.1", 0))
    ports = [s.getsockname()[1] for s in sockets]
    for s in sockets:
        s.close()
    return ports


def launch(tmp_path, n, mode, extra_env=None, wait_for=None):
    """Runs `n` workers; returns [(returncode, output)] of the ranks in `wait_for` (all by default). Every
    worker is killed at the deadline, when the test fails, or (those not waited for) at the end."""
    script = tmp_path / "worker.py"
    script.write_text(WORKER)
    cluster = {"worker": [f"localhost:{p}" for p in free_ports(n)]}
    procs = []
    python = [sys.executable] + (["-S"] if sys.flags.no_site else [])
    try:
        for i in range(n):
            env = dict(os.environ, PYTHONPATH=os.pathsep.join(p for p in sys.path if p),
                       TF_CONFIG=json.dumps({"cluster": cluster, "task": {"type": "worker", "index": i}}),
                       EMBER_COLLECTIVE_STORE=str(tmp_path / "store"), OMP_NUM_THREADS="1", **(extra_env or {}))
            procs.append(subprocess.Popen(python + [str(script), mode, str(tmp_path)], env=env,
                                          stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True))
        deadline = time.monotonic() + DEADLINE_SECONDS
        results = []
        for rank, p in enumerate(procs):
            if wait_for is not None and rank not in wait_for:
                continue
            try:
                out, _ = p.communicate(timeout=max(1.0, deadline - time.monotonic()))
            except subprocess.TimeoutExpired:
                pytest.fail(f"a {mode} worker did not finish within {DEADLINE_SECONDS} s")
            results.append((p.returncode, out))
        return results
    finally:
        for p in procs:
            if p.poll() is None:
                p.kill()
                p.wait()


@pytest.mark.parametrize("workers", [2, 4])
@pytest.mark.parametrize("mode", ["eager", "function"])
def test_data_parallel_training_matches_one_process_on_the_global_batch(tmp_path, workers, mode):
    results = launch(tmp_path, workers, mode)
    for rank, (code, out) in enumerate(results):
        assert code == 0 and "WORKER-DONE" in out, f"worker {rank} failed:\n{out}"
    expected = reference_weights()
    for rank in range(workers):
        got = np.load(tmp_path / f"weights{rank}.npz")
        for i, e in enumerate(expected):
            np.testing.assert_allclose(got[f"arr_{i}"], e, rtol=1e-5, atol=1e-6,
                                       err_msg=f"worker {rank}, variable {i}")


@pytest.mark.parametrize("workers,optimizer", [(2, "sgd"), (4, "sgd"), (2, "adam")])
def test_multi_worker_mirrored_strategy_matches_one_process(tmp_path, workers, optimizer):
    # Adam's slots and every optimizer's step counter are created in the scope: from the chief, by broadcast
    results = launch(tmp_path, workers, "strategy_adam" if optimizer == "adam" else "strategy")
    for rank, (code, out) in enumerate(results):
        assert code == 0 and "WORKER-DONE" in out, f"worker {rank} failed:\n{out}"
    expected = reference_weights(tf.keras.optimizers.Adam(learning_rate=0.1) if optimizer == "adam" else None)
    for rank in range(workers):
        got = np.load(tmp_path / f"weights{rank}.npz")
        for i, e in enumerate(expected):
            np.testing.assert_allclose(got[f"arr_{i}"], e, rtol=1e-5, atol=1e-6,
                                       err_msg=f"worker {rank}, variable {i}")


@pytest.mark.parametrize("workers", [2, 4])
def test_a_killed_worker_makes_the_others_fail_within_the_timeout(tmp_path, workers):
    timeout = 5.0
    start = time.monotonic()
    results = launch(tmp_path, workers, "kill", {"WORKER_TIMEOUT": str(timeout)})
    assert results[-1][0] == -signal.SIGKILL, results[-1][1]
    for rank, (code, out) in enumerate(results[:-1]):
        assert code == 3, f"worker {rank} should have failed with an ember error:\n{out}"
        line = next(l for l in out.splitlines() if l.startswith("WORKER-ERROR"))
        assert line.split()[1] in ("UnavailableError", "DeadlineExceededError"), line
        assert "CollectiveReduceV2" in line, line
        seconds = float(line.split()[3].rstrip("s:"))
        assert seconds < timeout + 10, line  # bounded by the timeout, with room for a loaded CI machine
    assert time.monotonic() - start < DEADLINE_SECONDS


def test_a_hung_worker_makes_the_others_fail_with_deadline_exceeded(tmp_path):
    timeout = 3.0
    results = launch(tmp_path, 2, "hang", {"WORKER_TIMEOUT": str(timeout)}, wait_for=[0])
    code, out = results[0]
    assert code == 3, out
    line = next(l for l in out.splitlines() if l.startswith("WORKER-ERROR"))
    assert line.split()[1] == "DeadlineExceededError", line
    assert "timed out" in line, line


def test_workers_reducing_different_sizes_get_an_error_not_a_crash(tmp_path):
    # Gloo itself trusts the sizes: a peer sending more than expected aborted the receiving process.
    results = launch(tmp_path, 2, "mismatch")
    for rank, (code, out) in enumerate(results):
        assert code == 0 and "WORKER-DONE" in out, f"worker {rank} failed:\n{out}"
        line = next(l for l in out.splitlines() if l.startswith("WORKER-ERROR"))
        assert "InvalidArgumentError" in line and "must reduce a tensor of the same size and dtype" in line, line
        assert f"(rank {rank}) has {4 + rank} elements of float32" in line, line


def test_workers_started_by_mpirun_find_each_other_without_tf_config(tmp_path):
    # OpenMPI's launcher (openmpi-bin, scripts/install_deps.sh): its OMPI_COMM_WORLD_RANK/SIZE name the group
    script = tmp_path / "mpi_worker.py"
    script.write_text(textwrap.dedent('''
        import sys
        import ember as tf
        from ember.distribute.experimental import collective
        r, n = collective.initialize(timeout_seconds=30)
        total = float(collective.all_reduce(tf.constant(float(r + 1)), "sum"))
        with open(sys.argv[1] + f"/rank{r}", "w") as f:  # files: the two workers' stdout interleave
            f.write(f"MPI-WORKER {r} {n} {total}")
    '''))
    env = {k: v for k, v in os.environ.items() if k != "TF_CONFIG"}
    env.update(PYTHONPATH=os.pathsep.join(p for p in sys.path if p), OMP_NUM_THREADS="1")
    python = [sys.executable] + (["-S"] if sys.flags.no_site else [])
    proc = subprocess.run(["mpirun", "--allow-run-as-root", "--oversubscribe", "-np", "2", *python, str(script),
                           str(tmp_path)], env=env, capture_output=True, text=True, timeout=DEADLINE_SECONDS)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    lines = [(tmp_path / f"rank{r}").read_text() for r in range(2)]
    assert lines == ["MPI-WORKER 0 2 3.0", "MPI-WORKER 1 2 3.0"], proc.stdout + proc.stderr
