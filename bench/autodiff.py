"""Autodiff benchmarks (issue 6), side by side, one subprocess per framework:

    python3 bench/autodiff.py [--quick]

- L2HMC training step: 200 samples, 10 leapfrog steps on a strongly correlated 2-D Gaussian, width-10
  MLPs, the energy's gradient inside the differentiated step, Adam. Written once in TF2 style
  (``l2hmc_tf_style``) and run with ``import ember as tf`` and with TensorFlow; the JAX (jit) and PyTorch
  (eager autograd; no TorchScript/torch.compile here) versions follow the same maths.
- MLP training step (784-256-256-10, SGD) at batch 64 and 512: staged (ember.function / tf.function /
  jax.jit) and eager (ember, TensorFlow, PyTorch).
- Tape overhead per recorded tiny op in eager mode (ember tape vs PyTorch autograd).
"""
import argparse
import json
import os
import subprocess
import sys
import time

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)

D, WIDTH, BATCH, STEPS, EPS = 2, 10, 200, 10, 0.1
# The precision matrix of [[1, 0.99], [0.99, 1]], written out: np.linalg.inv would start NumPy's OpenBLAS
# thread pool, whose idle spinning takes a core from whichever framework is being measured.
PREC = (np.array([[1.0, -0.99], [-0.99, 1.0]]) / (1 - 0.99 ** 2)).astype(np.float32)


def timed(fn, seconds, min_calls=3):
    fn()
    fn()
    calls, start = 0, time.perf_counter()
    best = float("inf")
    while calls < min_calls or time.perf_counter() - start < seconds:
        t0 = time.perf_counter()
        fn()
        best = min(best, time.perf_counter() - t0)
        calls += 1
    return best


def l2hmc_params(rng):
    shapes = [(D + 1, WIDTH), (WIDTH,), (WIDTH, D), (WIDTH, D), (WIDTH, D)]
    return [rng.normal(0, 0.1, s).astype(np.float32) for s in shapes]


def l2hmc_tf_style(tf, params_np):
    """The L2HMC step in TF2 style: the same code runs with ember and with TensorFlow."""
    params = [tf.Variable(p) for p in params_np]
    w1, b1, ws, wt, wq = params
    prec = tf.constant(PREC)
    ones = tf.ones([BATCH, 1])
    opt = tf.keras.optimizers.Adam(1e-3)

    def energy(x):
        return 0.5 * tf.reduce_sum(tf.matmul(x, prec) * x, axis=1)

    def net(x, t):
        h = tf.nn.relu(tf.matmul(tf.concat([x, t * ones], axis=1), w1) + b1)
        return tf.tanh(tf.matmul(h, ws)), tf.matmul(h, wt), tf.tanh(tf.matmul(h, wq))

    def grad_energy(x):
        with tf.GradientTape() as g:
            g.watch(x)
            e = tf.reduce_sum(energy(x))
        return g.gradient(e, x)

    def leapfrog(x, v, t):
        s, tr, q = net(x, t)
        v = v * tf.exp(0.5 * EPS * s) - 0.5 * EPS * (grad_energy(x) * tf.exp(EPS * q) + tr)
        s, tr, q = net(v, t)
        x = x * tf.exp(EPS * s) + EPS * (v * tf.exp(EPS * q) + tr)
        s, tr, q = net(x, t)
        v = v * tf.exp(0.5 * EPS * s) - 0.5 * EPS * (grad_energy(x) * tf.exp(EPS * q) + tr)
        return x, v

    def loss_fn(x0, v0):
        x, v = x0, v0
        for i in range(STEPS):
            x, v = leapfrog(x, v, float(i) / STEPS)
        h0 = energy(x0) + 0.5 * tf.reduce_sum(v0 * v0, axis=1)
        h1 = energy(x) + 0.5 * tf.reduce_sum(v * v, axis=1)
        accept = tf.minimum(1.0, tf.exp(h0 - h1))
        jump = tf.reduce_sum((x - x0) ** 2, axis=1)
        return -tf.reduce_mean(accept * jump)

    @tf.function
    def train_step(x0, v0):
        with tf.GradientTape() as tape:
            loss = loss_fn(x0, v0)
        grads = tape.gradient(loss, params)
        opt.apply_gradients(zip(grads, params))
        return loss

    return train_step


def mlp_params(rng):
    shapes = [(784, 256), (256,), (256, 256), (256,), (256, 10), (10,)]
    return [rng.normal(0, 0.05, s).astype(np.float32) for s in shapes]


def mlp_tf_style(tf, params_np, staged):
    params = [tf.Variable(p) for p in params_np]

    def step(x, labels):
        with tf.GradientTape() as tape:
            h = tf.nn.relu(tf.matmul(x, params[0]) + params[1])
            h = tf.nn.relu(tf.matmul(h, params[2]) + params[3])
            logits = tf.matmul(h, params[4]) + params[5]
            loss = tf.reduce_mean(tf.nn.sparse_softmax_cross_entropy_with_logits(labels=labels, logits=logits))
        grads = tape.gradient(loss, params)
        for p, g in zip(params, grads):
            p.assign_sub(0.01 * g)
        return loss

    return tf.function(step) if staged else step


def worker(framework, quick):
    rng = np.random.default_rng(0)
    seconds = 0.5 if quick else 2.0
    results = {}
    x0 = rng.standard_normal((BATCH, D)).astype(np.float32)
    v0 = rng.standard_normal((BATCH, D)).astype(np.float32)
    data = {b: (rng.standard_normal((b, 784)).astype(np.float32), rng.integers(0, 10, b).astype(np.int32))
            for b in (64, 512)}
    if framework in ("ember", "tensorflow"):
        if framework == "tensorflow":
            os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")
            import tensorflow as tf
        else:
            import ember as tf
        step = l2hmc_tf_style(tf, l2hmc_params(np.random.default_rng(1)))
        a, b = tf.constant(x0), tf.constant(v0)
        results["l2hmc_step"] = timed(lambda: step(a, b).numpy(), seconds)
        for bsz, (x, y) in data.items():
            xt, yt = tf.constant(x), tf.constant(y)
            staged = mlp_tf_style(tf, mlp_params(np.random.default_rng(2)), True)
            results[f"mlp_step_{bsz}"] = timed(lambda: staged(xt, yt).numpy(), seconds)
            eager = mlp_tf_style(tf, mlp_params(np.random.default_rng(2)), False)
            results[f"mlp_eager_step_{bsz}"] = timed(lambda: eager(xt, yt).numpy(), seconds)
        t = tf.constant(np.ones((2, 2), np.float32))
        n = 2000

        def chain():
            y = t
            for _ in range(n):
                y = y * 1.0
            return y

        def taped():
            with tf.GradientTape() as tape:
                tape.watch(t)
                chain()

        results["tape_overhead_per_op"] = (timed(taped, seconds) - timed(chain, seconds)) / n
    elif framework == "jax":
        import jax
        import jax.numpy as jnp

        prec = jnp.asarray(PREC)

        def energy(x):
            return 0.5 * jnp.sum((x @ prec) * x, axis=1)

        def net(p, x, t):
            w1, b1, ws, wt, wq = p
            h = jax.nn.relu(jnp.concatenate([x, t * jnp.ones((BATCH, 1))], axis=1) @ w1 + b1)
            return jnp.tanh(h @ ws), h @ wt, jnp.tanh(h @ wq)

        grad_energy = jax.grad(lambda x: jnp.sum(energy(x)))

        def loss_fn(p, x0, v0):
            x, v = x0, v0
            for i in range(STEPS):
                t = float(i) / STEPS
                s, tr, q = net(p, x, t)
                v = v * jnp.exp(0.5 * EPS * s) - 0.5 * EPS * (grad_energy(x) * jnp.exp(EPS * q) + tr)
                s, tr, q = net(p, v, t)
                x = x * jnp.exp(EPS * s) + EPS * (v * jnp.exp(EPS * q) + tr)
                s, tr, q = net(p, x, t)
                v = v * jnp.exp(0.5 * EPS * s) - 0.5 * EPS * (grad_energy(x) * jnp.exp(EPS * q) + tr)
            h0 = energy(x0) + 0.5 * jnp.sum(v0 * v0, axis=1)
            h1 = energy(x) + 0.5 * jnp.sum(v * v, axis=1)
            accept = jnp.minimum(1.0, jnp.exp(h0 - h1))
            return -jnp.mean(accept * jnp.sum((x - x0) ** 2, axis=1))

        @jax.jit
        def train_step(p, m, s, k, x0, v0):
            loss, g = jax.value_and_grad(loss_fn)(p, x0, v0)
            k = k + 1
            m = [0.9 * mi + 0.1 * gi for mi, gi in zip(m, g)]
            s = [0.999 * si + 0.001 * gi * gi for si, gi in zip(s, g)]
            lr = 1e-3 * jnp.sqrt(1 - 0.999 ** k) / (1 - 0.9 ** k)
            p = [pi - lr * mi / (jnp.sqrt(si) + 1e-7) for pi, mi, si in zip(p, m, s)]
            return loss, p, m, s, k

        p = [jnp.asarray(a) for a in l2hmc_params(np.random.default_rng(1))]
        state = [p, [jnp.zeros_like(a) for a in p], [jnp.zeros_like(a) for a in p], jnp.float32(0)]
        a, b = jnp.asarray(x0), jnp.asarray(v0)

        def run():
            loss, *new = train_step(*state, a, b)
            state[:] = new
            loss.block_until_ready()

        results["l2hmc_step"] = timed(run, seconds)

        def mlp_loss(p, x, y):
            h = jax.nn.relu(x @ p[0] + p[1])
            h = jax.nn.relu(h @ p[2] + p[3])
            logits = h @ p[4] + p[5]
            return -jnp.mean(jnp.take_along_axis(jax.nn.log_softmax(logits), y[:, None], axis=1))

        @jax.jit
        def mlp_step(p, x, y):
            loss, g = jax.value_and_grad(mlp_loss)(p, x, y)
            return loss, [pi - 0.01 * gi for pi, gi in zip(p, g)]

        for bsz, (x, y) in data.items():
            mp = [jnp.asarray(a) for a in mlp_params(np.random.default_rng(2))]
            holder = [mp]
            xj, yj = jnp.asarray(x), jnp.asarray(y)

            def run_mlp():
                loss, holder[0] = mlp_step(holder[0], xj, yj)
                loss.block_until_ready()

            results[f"mlp_step_{bsz}"] = timed(run_mlp, seconds)
    elif framework == "torch":
        import torch

        torch.set_num_threads(os.cpu_count())
        prec = torch.from_numpy(PREC)
        lp = [torch.tensor(a, requires_grad=True) for a in l2hmc_params(np.random.default_rng(1))]
        opt = torch.optim.Adam(lp, lr=1e-3, eps=1e-7)
        ones = torch.ones(BATCH, 1)

        def energy(x):
            return 0.5 * torch.sum((x @ prec) * x, dim=1)

        def net(x, t):
            w1, b1, ws, wt, wq = lp
            h = torch.relu(torch.cat([x, t * ones], dim=1) @ w1 + b1)
            return torch.tanh(h @ ws), h @ wt, torch.tanh(h @ wq)

        def grad_energy(x):
            if not x.requires_grad:
                x = x.requires_grad_()
            return torch.autograd.grad(energy(x).sum(), x, create_graph=True)[0]

        def l2hmc_torch(x0, v0):
            x, v = x0, v0
            for i in range(STEPS):
                t = float(i) / STEPS
                s, tr, q = net(x, t)
                v = v * torch.exp(0.5 * EPS * s) - 0.5 * EPS * (grad_energy(x) * torch.exp(EPS * q) + tr)
                s, tr, q = net(v, t)
                x = x * torch.exp(EPS * s) + EPS * (v * torch.exp(EPS * q) + tr)
                s, tr, q = net(x, t)
                v = v * torch.exp(0.5 * EPS * s) - 0.5 * EPS * (grad_energy(x) * torch.exp(EPS * q) + tr)
            h0 = energy(x0) + 0.5 * torch.sum(v0 * v0, dim=1)
            h1 = energy(x) + 0.5 * torch.sum(v * v, dim=1)
            accept = torch.clamp(torch.exp(h0 - h1), max=1.0)
            return -torch.mean(accept * torch.sum((x - x0) ** 2, dim=1))

        tx0, tv0 = torch.from_numpy(x0), torch.from_numpy(v0)

        def l2hmc_eager_step():
            opt.zero_grad()
            loss = l2hmc_torch(tx0.clone().requires_grad_(), tv0)
            loss.backward()
            opt.step()
            return loss.item()

        results["l2hmc_eager_step"] = timed(l2hmc_eager_step, seconds)
        for bsz, (x, y) in data.items():
            ps = [torch.tensor(a, requires_grad=True) for a in mlp_params(np.random.default_rng(2))]
            xt, yt = torch.from_numpy(x), torch.from_numpy(y).long()

            def eager_step():
                h = torch.relu(xt @ ps[0] + ps[1])
                h = torch.relu(h @ ps[2] + ps[3])
                loss = torch.nn.functional.cross_entropy(h @ ps[4] + ps[5], yt)
                grads = torch.autograd.grad(loss, ps)
                with torch.no_grad():
                    for p, g in zip(ps, grads):
                        p.sub_(0.01 * g)
                return loss.item()

            results[f"mlp_eager_step_{bsz}"] = timed(eager_step, seconds)
        t = torch.ones(2, 2, requires_grad=True)
        n = 2000

        def chain(src):
            y = src
            for _ in range(n):
                y = y * 1.0
            return y

        with torch.no_grad():
            plain = timed(lambda: chain(t), seconds)
        results["tape_overhead_per_op"] = (timed(lambda: chain(t), seconds) - plain) / n
    print(json.dumps(results))


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--quick", action="store_true")
    parser.add_argument("--worker")
    args = parser.parse_args()
    if args.worker:
        worker(args.worker, args.quick)
        return
    env = dict(os.environ, PYTHONPATH=os.path.join(ROOT, "python") + os.pathsep + os.environ.get("PYTHONPATH", ""))
    env.setdefault("OPENBLAS_NUM_THREADS", "1")  # NumPy's BLAS is not what is measured; keep its pool idle
    measured = {}
    for fw in ("ember", "tensorflow", "jax", "torch"):
        cmd = [sys.executable, __file__, "--worker", fw] + (["--quick"] if args.quick else [])
        proc = subprocess.run(cmd, capture_output=True, text=True, env=env)
        if proc.returncode != 0:
            print(f"{fw}: failed or not installed ({proc.stderr.strip().splitlines()[-1:]})")
            continue
        measured[fw] = json.loads(proc.stdout.strip().splitlines()[-1])
    print(json.dumps(measured, indent=1))
    e = measured.get("ember", {})

    def ratio(key, peers, label, target):
        vals = {p: measured[p][key] for p in peers if p in measured and key in measured[p]}
        if key not in e or not vals:
            return
        best = min(vals, key=vals.get)
        print(f"{label}: ember {e[key] * 1e3:.3f} ms vs {best} {vals[best] * 1e3:.3f} ms -> "
              f"{vals[best] / e[key]:.2f}x faster (target {target})")

    ratio("l2hmc_step", ["tensorflow", "jax"], "L2HMC train step vs fastest staged peer", ">= 2x")
    if "l2hmc_step" in e and "l2hmc_eager_step" in measured.get("torch", {}):
        t = measured["torch"]["l2hmc_eager_step"]
        print(f"L2HMC train step vs PyTorch eager (no staged PyTorch measured): ember {e['l2hmc_step'] * 1e3:.3f} ms "
              f"vs {t * 1e3:.3f} ms -> {t / e['l2hmc_step']:.2f}x faster")
    for b in (64, 512):
        ratio(f"mlp_step_{b}", ["tensorflow", "jax"], f"MLP train step batch {b} vs fastest staged peer", ">= 1x")
        ratio(f"mlp_eager_step_{b}", ["tensorflow", "torch"], f"Eager MLP step batch {b} vs fastest eager peer",
              ">= 1x")
    if "tape_overhead_per_op" in e and "torch" in measured:
        print(f"Tape overhead per tiny op: ember {e['tape_overhead_per_op'] * 1e9:.0f} ns vs PyTorch autograd "
              f"{measured['torch']['tape_overhead_per_op'] * 1e9:.0f} ns (target: below)")


if __name__ == "__main__":
    main()
