"""Autodiff benchmarks (issue 6), side by side, one subprocess per framework:

    python3 bench/autodiff.py [--quick]

- L2HMC training step: 200 samples, 10 leapfrog steps on a strongly correlated 2-D Gaussian, width-10
  MLPs, the energy's gradient inside the differentiated step, Adam. Written once in TF2 style
  (bench/l2hmc_model.py) and run with ``import ember as tf`` and with TensorFlow; the JAX (jit) and PyTorch
  (eager autograd, and torch.compile of the loss with backward and the update outside it) versions follow
  the same maths.
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

from l2hmc_model import BATCH, D, jax_port, l2hmc_params, tf_style, torch_port

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)


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


def l2hmc_tf_style(tf, params_np):
    """The L2HMC training step in TF2 style (bench/l2hmc_model.py): runs with ember and with TensorFlow."""
    params = [tf.Variable(p) for p in params_np]
    model = tf_style(tf, params)
    opt = tf.keras.optimizers.Adam(1e-3)

    @tf.function
    def train_step(x0, v0):
        with tf.GradientTape() as tape:
            loss = model.loss(x0, v0)
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

        loss_fn = jax_port(jax, jnp).loss

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
        lp = [torch.tensor(a, requires_grad=True) for a in l2hmc_params(np.random.default_rng(1))]
        opt = torch.optim.Adam(lp, lr=1e-3, eps=1e-7)
        l2hmc_torch = torch_port(torch, lp, energy_grad="autograd").loss

        tx0, tv0 = torch.from_numpy(x0), torch.from_numpy(v0)

        def l2hmc_eager_step():
            opt.zero_grad()
            loss = l2hmc_torch(tx0.clone().requires_grad_(), tv0)
            loss.backward()
            opt.step()
            return loss.item()

        results["l2hmc_eager_step"] = timed(l2hmc_eager_step, seconds)
        # The staged peer: torch.compile of the loss (torch.func.grad for the energy's gradient, which it
        # traces); backward and Adam run as PyTorch's compiled-training recipe does, outside the compiled fn.
        try:
            sp = [torch.tensor(a, requires_grad=True) for a in l2hmc_params(np.random.default_rng(1))]
            sopt = torch.optim.Adam(sp, lr=1e-3, eps=1e-7)
            staged_loss = torch.compile(torch_port(torch, sp, energy_grad="func").loss)

            def l2hmc_staged_step():
                sopt.zero_grad()
                loss = staged_loss(tx0, tv0)
                loss.backward()
                sopt.step()
                return loss.item()

            l2hmc_staged_step()
            results["l2hmc_step"] = timed(l2hmc_staged_step, seconds)
        except Exception as e:  # noqa: BLE001 - report the peer's failure, keep the other measurements
            results["l2hmc_step_error"] = f"torch.compile: {type(e).__name__}: {str(e).splitlines()[0][:160]}"
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

            def loss_fn(xb, yb):
                h = torch.relu(xb @ ps[0] + ps[1])
                h = torch.relu(h @ ps[2] + ps[3])
                return torch.nn.functional.cross_entropy(h @ ps[4] + ps[5], yb)

            compiled_loss = torch.compile(loss_fn)

            def staged_step():
                loss = compiled_loss(xt, yt)
                grads = torch.autograd.grad(loss, ps)
                with torch.no_grad():
                    for p, g in zip(ps, grads):
                        p.sub_(0.01 * g)
                return loss.item()

            try:
                staged_step()
                results[f"mlp_step_{bsz}"] = timed(staged_step, seconds)
            except Exception as e:  # noqa: BLE001
                results[f"mlp_step_{bsz}_error"] = f"torch.compile: {type(e).__name__}"
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

    for fw, values in measured.items():
        for key, message in values.items():
            if key.endswith("_error"):
                print(f"{fw} {key[:-6]}: not measured ({message})")
    for peer in ("tensorflow", "jax", "torch"):
        ratio("l2hmc_step", [peer], f"L2HMC train step vs {peer} (staged)", ">= 2x")
    ratio("l2hmc_step", ["tensorflow", "jax", "torch"], "L2HMC train step vs fastest staged peer", ">= 2x")
    if "l2hmc_step" in e and "l2hmc_eager_step" in measured.get("torch", {}):
        t = measured["torch"]["l2hmc_eager_step"]
        print(f"L2HMC train step vs PyTorch eager: ember {e['l2hmc_step'] * 1e3:.3f} ms "
              f"vs {t * 1e3:.3f} ms -> {t / e['l2hmc_step']:.2f}x faster")
    for b in (64, 512):
        ratio(f"mlp_step_{b}", ["tensorflow", "jax", "torch"], f"MLP train step batch {b} vs fastest staged peer",
              ">= 1x")
        ratio(f"mlp_eager_step_{b}", ["tensorflow", "torch"], f"Eager MLP step batch {b} vs fastest eager peer",
              ">= 1x")
    if "tape_overhead_per_op" in e and "torch" in measured:
        print(f"Tape overhead per tiny op: ember {e['tape_overhead_per_op'] * 1e9:.0f} ns vs PyTorch autograd "
              f"{measured['torch']['tape_overhead_per_op'] * 1e9:.0f} ns (target: below)")


if __name__ == "__main__":
    main()
