"""ResNet-20 training step (issue 17), side by side in one run, one subprocess per framework:

    python3 bench/resnet.py [--quick] [--one-thread] [--batch 32 128] [--frameworks ember tensorflow torch ...]

--one-thread runs every framework on one thread and compares CPU time per step as well, the steadier figure
when other processes share the machine.

Model: ResNet-20 for CIFAR-10 (He et al. 2015, section 4.2): a 3x3 convolution to 16 channels, three stages
of three basic blocks (16, 32, 64 channels; the first block of stages 2 and 3 has stride 2 and a 1x1
projection shortcut with batch norm), global average pooling and a dense layer to 10 classes; every
convolution without bias and followed by batch norm in training mode (batch statistics, running averages
updated with momentum 0.1). Input 32x32x3, softmax cross-entropy, SGD with momentum 0.9 (lr 0.01, no
weight decay). 272k parameters.

One training step = forward, backward, the momentum update of every weight and the running-average update
of every batch norm. ember and TensorFlow run the very same code (`tf_model`: tf.Module, tf.Variable,
tf.GradientTape in a tf.function) with only the import changed; PyTorch runs an equivalent nn.Module
eagerly (NCHW, its native layout) and through torch.compile; JAX runs the step under jax.jit.

Every framework starts from the same weights (drawn here with NumPy) and trains on the same batch; after
CHECK_STEPS steps each one's losses are compared with TensorFlow's (ember's when TensorFlow is missing), so
a fast wrong answer prints FAIL. Padding is explicit (1 on each side of a 3x3 convolution), as PyTorch's, so
the stride-2 convolutions see the same windows everywhere.

PyTorch comes from EMBER_BENCH_PATH_TORCH, JAX from EMBER_BENCH_PATH_JAX (directories of packages put on
that worker's path only, e.g. /work/torchenv and /work/jaxenv). The machine should be quiet: the script
warns when other processes were busy while a worker ran.
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

CLASSES, LR, MOMENTUM, BN_MOMENTUM, EPS = 10, 0.01, 0.9, 0.1, 1e-5
CHECK_STEPS = 5
FRAMEWORKS = ("ember", "tensorflow", "torch", "torch.compile", "jax")


# ---------------------------------------------------------------- the architecture, shared by all frameworks

def architecture():
    """[(block name, in channels, out channels, stride)] of the nine basic blocks."""
    blocks, cin = [], 16
    for stage, cout in enumerate((16, 32, 64)):
        for b in range(3):
            stride = 2 if stage > 0 and b == 0 else 1
            blocks.append((f"s{stage}b{b}", cin, cout, stride))
            cin = cout
    return blocks


def initial_weights():
    """{name: float32 array}: convolution filters HWIO (He normal), batch-norm gamma/beta, dense [64, 10]."""
    rng = np.random.default_rng(0)
    w = {}

    def conv(name, k, cin, cout):
        w[name + "/w"] = (rng.standard_normal((k, k, cin, cout)) * np.sqrt(2.0 / (k * k * cin))).astype(np.float32)
        w[name + "/gamma"] = np.ones(cout, np.float32)
        w[name + "/beta"] = np.zeros(cout, np.float32)

    conv("stem", 3, 3, 16)
    for name, cin, cout, stride in architecture():
        conv(name + "/a", 3, cin, cout)
        conv(name + "/b", 3, cout, cout)
        if stride != 1 or cin != cout:
            conv(name + "/proj", 1, cin, cout)
    w["dense/w"] = (rng.standard_normal((64, CLASSES)) / np.sqrt(64)).astype(np.float32)
    w["dense/b"] = np.zeros(CLASSES, np.float32)
    return w


def batch_data(batch):
    rng = np.random.default_rng(1)
    images = rng.standard_normal((batch, 32, 32, 3)).astype(np.float32)
    labels = rng.integers(0, CLASSES, batch).astype(np.int32)
    return images, labels


# ---------------------------------------------------------------- TensorFlow 2 style: ember and TensorFlow

def tf_model(tf, weights):
    """The training step for `tf` (ember or TensorFlow): the same code for both."""
    # TensorFlow 2 keeps fused_batch_norm (what Keras' BatchNormalization runs) under compat.v1.
    fused_batch_norm = getattr(tf.nn, "fused_batch_norm", None) or tf.compat.v1.nn.fused_batch_norm

    class ResNet20(tf.Module):
        def __init__(self):
            super().__init__()
            self.names = sorted(weights)
            self.weights = [tf.Variable(weights[n], name=n.replace("/", "_")) for n in self.names]
            self.by_name = dict(zip(self.names, self.weights))
            self.velocity = [tf.Variable(tf.zeros_like(v)) for v in self.weights]
            bn = sorted(n[: -len("/gamma")] for n in weights if n.endswith("/gamma"))
            self.running = {n: (tf.Variable(tf.zeros([weights[n + "/gamma"].shape[0]])),
                                tf.Variable(tf.ones([weights[n + "/gamma"].shape[0]]))) for n in bn}

        def conv_bn(self, x, name, stride, relu, updates):
            w = self.by_name[name + "/w"]
            pad = (w.shape[0] - 1) // 2
            x = tf.nn.conv2d(x, w, stride, [[0, 0], [pad, pad], [pad, pad], [0, 0]])
            mean, var = self.running[name]
            x, new_mean, new_var = fused_batch_norm(
                x, self.by_name[name + "/gamma"], self.by_name[name + "/beta"], mean=mean, variance=var,
                epsilon=EPS, is_training=True, exponential_avg_factor=BN_MOMENTUM)
            updates += [(mean, new_mean), (var, new_var)]
            return tf.nn.relu(x) if relu else x

        def __call__(self, x):
            """(logits, [(running-average variable, its new value)])."""
            updates = []
            x = self.conv_bn(x, "stem", 1, True, updates)
            for name, cin, cout, stride in architecture():
                shortcut = x
                x = self.conv_bn(x, name + "/a", stride, True, updates)
                x = self.conv_bn(x, name + "/b", 1, False, updates)
                if stride != 1 or cin != cout:
                    shortcut = self.conv_bn(shortcut, name + "/proj", stride, False, updates)
                x = tf.nn.relu(x + shortcut)
            x = tf.reduce_mean(x, axis=[1, 2])
            return tf.matmul(x, self.by_name["dense/w"]) + self.by_name["dense/b"], updates

    model = ResNet20()

    @tf.function
    def train_step(images, labels):
        with tf.GradientTape() as tape:
            logits, updates = model(images)
            loss = tf.reduce_mean(tf.nn.sparse_softmax_cross_entropy_with_logits(labels=labels, logits=logits))
        grads = tape.gradient(loss, model.weights)
        for w, v, g in zip(model.weights, model.velocity, grads):
            v.assign(MOMENTUM * v - LR * g)
            w.assign_add(v)
        for var, new in updates:
            var.assign(new)
        return loss

    def step(images, labels):
        return train_step(images, labels)

    return step, lambda loss: float(loss.numpy())


def tf_worker(tf, batch):
    images, labels = batch_data(batch)
    step, value = tf_model(tf, initial_weights())
    x, y = tf.constant(images), tf.constant(labels)
    return (lambda: step(x, y)), value


# ---------------------------------------------------------------- PyTorch (eager and torch.compile)

def torch_worker(batch, compiled):
    import torch
    import torch.nn.functional as F

    torch.set_num_threads(os.cpu_count())
    weights = initial_weights()

    class ResNet20(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.p = torch.nn.ParameterDict()
            self.bn = {}
            for n, v in weights.items():
                t = torch.from_numpy(v.transpose(3, 2, 0, 1).copy() if v.ndim == 4 else v.copy())
                self.p[n.replace("/", "_")] = torch.nn.Parameter(t)
            for n in weights:
                if n.endswith("/gamma"):
                    c = weights[n].shape[0]
                    name = n[: -len("/gamma")].replace("/", "_")
                    self.register_buffer(name + "_mean", torch.zeros(c))
                    self.register_buffer(name + "_var", torch.ones(c))

        def conv_bn(self, x, name, stride, relu):
            name = name.replace("/", "_")
            w = self.p[name + "_w"]
            x = F.conv2d(x, w, stride=stride, padding=(w.shape[2] - 1) // 2)
            x = F.batch_norm(x, getattr(self, name + "_mean"), getattr(self, name + "_var"), self.p[name + "_gamma"],
                             self.p[name + "_beta"], training=True, momentum=BN_MOMENTUM, eps=EPS)
            return F.relu(x) if relu else x

        def forward(self, x):
            x = self.conv_bn(x, "stem", 1, True)
            for name, cin, cout, stride in architecture():
                shortcut = x
                x = self.conv_bn(x, name + "/a", stride, True)
                x = self.conv_bn(x, name + "/b", 1, False)
                if stride != 1 or cin != cout:
                    shortcut = self.conv_bn(shortcut, name + "/proj", stride, False)
                x = F.relu(x + shortcut)
            x = x.mean(dim=(2, 3))
            return x @ self.p["dense_w"] + self.p["dense_b"]

    model = ResNet20()
    opt = torch.optim.SGD(model.parameters(), lr=LR, momentum=MOMENTUM)
    images, labels = batch_data(batch)
    x = torch.from_numpy(images.transpose(0, 3, 1, 2).copy())
    y = torch.from_numpy(labels.astype(np.int64))

    def train_step():
        opt.zero_grad(set_to_none=True)
        loss = F.cross_entropy(model(x), y)
        loss.backward()
        opt.step()
        return loss.detach()

    if compiled:
        # The whole step (forward, backward and the optimizer) as one compiled graph.
        train_step = torch.compile(train_step, dynamic=False)
    return train_step, lambda loss: float(loss)


# ---------------------------------------------------------------- JAX

def jax_worker(batch):
    import jax
    import jax.numpy as jnp

    weights = {n: jnp.asarray(v) for n, v in initial_weights().items()}
    running = {n[: -len("/gamma")]: (jnp.zeros(v.shape), jnp.ones(v.shape)) for n, v in weights.items()
               if n.endswith("/gamma")}

    def conv_bn(p, stats, new_stats, x, name, stride, relu):
        w = p[name + "/w"]
        pad = (w.shape[0] - 1) // 2
        x = jax.lax.conv_general_dilated(x, w, (stride, stride), ((pad, pad), (pad, pad)),
                                         dimension_numbers=("NHWC", "HWIO", "NHWC"))
        mean = jnp.mean(x, axis=(0, 1, 2))
        var = jnp.mean(jnp.square(x - mean), axis=(0, 1, 2))
        n = x.shape[0] * x.shape[1] * x.shape[2]
        m, v = stats[name]
        new_stats[name] = ((1 - BN_MOMENTUM) * m + BN_MOMENTUM * jax.lax.stop_gradient(mean),
                           (1 - BN_MOMENTUM) * v + BN_MOMENTUM * jax.lax.stop_gradient(var) * n / (n - 1))
        x = (x - mean) * jax.lax.rsqrt(var + EPS) * p[name + "/gamma"] + p[name + "/beta"]
        return jax.nn.relu(x) if relu else x

    def loss_fn(p, stats, x, y):
        new_stats = {}
        x = conv_bn(p, stats, new_stats, x, "stem", 1, True)
        for name, cin, cout, stride in architecture():
            shortcut = x
            x = conv_bn(p, stats, new_stats, x, name + "/a", stride, True)
            x = conv_bn(p, stats, new_stats, x, name + "/b", 1, False)
            if stride != 1 or cin != cout:
                shortcut = conv_bn(p, stats, new_stats, shortcut, name + "/proj", stride, False)
            x = jax.nn.relu(x + shortcut)
        logits = jnp.mean(x, axis=(1, 2)) @ p["dense/w"] + p["dense/b"]
        logp = jax.nn.log_softmax(logits)
        return -jnp.mean(jnp.take_along_axis(logp, y[:, None], axis=1)), new_stats

    @jax.jit
    def train_step(p, vel, stats, x, y):
        (loss, new_stats), g = jax.value_and_grad(loss_fn, has_aux=True)(p, stats, x, y)
        vel = {n: MOMENTUM * vel[n] - LR * g[n] for n in p}
        p = {n: p[n] + vel[n] for n in p}
        return p, vel, new_stats, loss

    images, labels = batch_data(batch)
    x, y = jnp.asarray(images), jnp.asarray(labels)
    state = [weights, {n: jnp.zeros_like(v) for n, v in weights.items()}, running]

    def step():
        state[0], state[1], state[2], loss = train_step(*state, x, y)
        return loss.block_until_ready()

    return step, lambda loss: float(loss)


# ---------------------------------------------------------------- timing

def measure(step, value, seconds):
    """(losses of the first CHECK_STEPS steps, median seconds per step after them, steps timed, the least
    CPU time of the process per step)."""
    losses = [value(step()) for _ in range(CHECK_STEPS)]  # also the warm-up (tracing, compiling)
    times, cpu = [], []
    end = time.perf_counter() + seconds
    while time.perf_counter() < end or len(times) < 5:
        t0, c0 = time.perf_counter(), time.process_time()
        value(step())  # reads the loss: waits for the step
        times.append(time.perf_counter() - t0)
        cpu.append(time.process_time() - c0)
    return losses, statistics.median(times), len(times), min(cpu)


def worker(framework, batches, quick, one_thread):
    out = {"steps": {}}
    if one_thread and framework == "jax":
        os.environ["XLA_FLAGS"] = "--xla_cpu_multi_thread_eigen=false intra_op_parallelism_threads=1"
    for batch in batches:
        t0 = time.perf_counter()
        if framework in ("ember", "tensorflow"):
            tf = __import__(framework)
            out["version"] = tf.__version__
            if one_thread:
                tf.config.threading.set_intra_op_parallelism_threads(1)
                tf.config.threading.set_inter_op_parallelism_threads(1)
            step, value = tf_worker(tf, batch)
        elif framework in ("torch", "torch.compile"):
            import torch

            out["version"] = torch.__version__
            step, value = torch_worker(batch, framework == "torch.compile")
            if one_thread:
                torch.set_num_threads(1)
        elif framework == "jax":
            import jax

            out["version"] = jax.__version__
            step, value = jax_worker(batch)
        else:
            raise ValueError(framework)
        try:
            losses, seconds, n, cpu = measure(step, value, 2.0 if quick else 8.0)
        except Exception as e:  # noqa: BLE001 - a framework that cannot run the step is reported, not fatal
            out["steps"][str(batch)] = {"failed": f"{type(e).__name__}: {(str(e).splitlines() or [''])[0][:200]}"}
            continue
        out["steps"][str(batch)] = {"losses": losses, "time": seconds, "timed_steps": n, "cpu": cpu,
                                    "setup_s": time.perf_counter() - t0 - seconds}
    print(json.dumps(out))


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--quick", action="store_true")
    parser.add_argument("--batch", type=int, nargs="+", default=[32, 128])
    parser.add_argument("--frameworks", nargs="+", default=list(FRAMEWORKS), choices=FRAMEWORKS)
    parser.add_argument("--one-thread", action="store_true",
                        help="every framework on one thread; prints CPU time per step too (steadier on a shared "
                             "machine)")
    parser.add_argument("--worker")
    args = parser.parse_args()
    if args.worker:
        worker(args.worker, args.batch, args.quick, args.one_thread)
        return
    if args.one_thread:
        os.environ["OMP_NUM_THREADS"] = "1"
    extra = (["--quick"] if args.quick else []) + (["--one-thread"] if args.one_thread else [])
    extra += ["--batch", *map(str, args.batch)]
    # EMBER_BENCH_PATH_TORCH serves both PyTorch workers.
    if "EMBER_BENCH_PATH_TORCH" in os.environ:
        os.environ.setdefault("EMBER_BENCH_PATH_TORCH.COMPILE", os.environ["EMBER_BENCH_PATH_TORCH"])
    results, notes = run_workers(__file__, args.frameworks, extra)
    print(f"bench/resnet.py: ResNet-20 training step, CIFAR shapes, SGD momentum {MOMENTUM}; "
          f"{1 if args.one_thread else os.cpu_count()} CPU thread(s); load {open('/proc/loadavg').read().split()[0]}; "
          + ", ".join(f"{fw} {r.get('version', '?')}" for fw, r in results.items()))
    for line in notes:
        print(line)
    for batch in args.batch:
        key = str(batch)
        runs = {fw: r["steps"][key] for fw, r in results.items() if key in r["steps"]}
        ref_fw = "tensorflow" if "losses" in runs.get("tensorflow", {}) else "ember"
        ref = runs.get(ref_fw, {}).get("losses")
        print(f"batch {batch}: {'framework':<14} {'ms/step':>9} {'img/s':>8} {'vs ember':>9} {'cpu ms':>8} "
              f"loss after {CHECK_STEPS} steps (check against {ref_fw})")
        ember_time = runs.get("ember", {}).get("time")
        peers = []
        for fw, r in runs.items():
            if "failed" in r:
                print(f"{'':9}{fw:<14} {'FAILED':>9}  {r['failed']}")
                continue
            err = max(abs(a - b) / (1 + abs(b)) for a, b in zip(r["losses"], ref)) if ref else float("nan")
            check = "ok" if err < 2e-3 else f"FAIL (relative difference {err:.1e})"
            ratio = f"{r['time'] / ember_time:8.2f}x" if ember_time else f"{'-':>9}"
            print(f"{'':9}{fw:<14} {r['time'] * 1e3:9.2f} {batch / r['time']:8.0f} {ratio} {r['cpu'] * 1e3:8.1f}  "
                  f"{r['losses'][-1]:.6f} {check}")
            if fw != "ember" and err < 2e-3:
                peers.append((r["time"], r["cpu"], fw))
        if ember_time and peers:
            best, _, fw = min(peers)
            print(f"{'':9}ember is {best / ember_time:.2f}x as fast as the fastest peer ({fw}); target >= 1.5x")
            if args.one_thread:
                best_cpu, fw = min((c, f) for _, c, f in peers)
                print(f"{'':9}CPU time: ember {best_cpu / runs['ember']['cpu']:.2f}x as fast as the fastest peer "
                      f"({fw})")
    print("ratios: peer time / ember time (> 1: ember faster); cpu ms: the least CPU time of the process per step "
          "(all its threads)")


if __name__ == "__main__":
    main()
