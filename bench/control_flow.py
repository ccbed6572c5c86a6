"""Control flow (issue 15), side by side in one run, one subprocess per framework:

    python3 bench/control_flow.py [--quick]

Workloads:
- while 10k: ``x = x * 0.999 + 0.5`` repeated n = 10,000 times, n a function argument (the trip count is
  known only at run time). ember and TensorFlow: ``tf.while_loop`` in a ``tf.function``; JAX:
  ``lax.fori_loop`` under ``jit`` with n traced. Targets: ember >= 10x TensorFlow, >= JAX.
- lstm step: an LSTM (input 64, hidden 128, batch 32, 100 steps) written as ``for t in tf.range(steps)``
  (AutoGraph), mean of the last hidden state as the loss, forward and backward by GradientTape and an Adam
  update of the four variables, as one ``tf.function`` step (the same source for ember and TensorFlow). JAX:
  ``lax.scan`` under ``jit`` with ``value_and_grad``; PyTorch: ``torch.compile`` of the loss (a Python loop
  over the steps), ``.backward()`` and the same Adam update in place. Targets: ember >= 2x TensorFlow, faster
  than JAX and torch.compile.

Each first result is checked against a float64 NumPy reference (the loop's value; the loss of the first
step), so a fast wrong answer shows as FAIL. A case that raises is reported with its error.
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
N_ITER = 10000
IN, HIDDEN, BATCH, STEPS = 64, 128, 32, 100
LR, B1, B2, EPS = 1e-3, 0.9, 0.999, 1e-7


def loop_reference(n=N_ITER):
    x = 1.0
    for _ in range(n):
        x = np.float32(np.float32(x) * np.float32(0.999) + np.float32(0.5))
    return float(x)


def lstm_data():
    rng = np.random.default_rng(0)
    w = (rng.standard_normal((IN, 4 * HIDDEN)) / np.sqrt(IN)).astype(np.float32)
    u = (rng.standard_normal((HIDDEN, 4 * HIDDEN)) / np.sqrt(HIDDEN)).astype(np.float32)
    b = np.zeros((4 * HIDDEN,), np.float32)
    xs = rng.standard_normal((STEPS, BATCH, IN)).astype(np.float32)
    return [w, u, b], xs


def _sigmoid(z):
    return 1.0 / (1.0 + np.exp(-z))


def lstm_reference_loss(params, xs):
    w, u, b = [p.astype(np.float64) for p in params]
    h = np.zeros((BATCH, HIDDEN))
    c = np.zeros((BATCH, HIDDEN))
    for t in range(STEPS):
        z = xs[t].astype(np.float64) @ w + h @ u + b
        i, f, g, o = np.split(z, 4, axis=1)
        c = _sigmoid(f) * c + _sigmoid(i) * np.tanh(g)
        h = _sigmoid(o) * np.tanh(c)
    return float(h.mean())


def lstm_loss_and_gradients(tf, variables, xs, batch, hidden):
    """The LSTM loss (mean of the last hidden state) over xs [steps, batch, in] with variables (w, u, b),
    and its gradients, for ember or TensorFlow as `tf`; an AutoGraph loop when called in a tf.function.
    tests/python/test_control_flow_passes.py runs it at a small size."""
    w, u, b = variables
    with tf.GradientTape() as tape:
        h = tf.zeros([batch, hidden])
        c = tf.zeros([batch, hidden])
        for t in tf.range(tf.shape(xs)[0]):
            z = tf.matmul(xs[t], w) + tf.matmul(h, u) + b
            i, f, g, o = tf.split(z, 4, axis=1)
            c = tf.sigmoid(f) * c + tf.sigmoid(i) * tf.tanh(g)
            h = tf.sigmoid(o) * tf.tanh(c)
        loss = tf.reduce_mean(h)
    return loss, tape.gradient(loss, variables)


# ---------------------------------------------------------------------------------------------------------
# Workers: each returns {case: (call, first result)}.

def tf_cases(tf):
    def while_case():
        @tf.function
        def loop(n, x):
            return tf.while_loop(lambda i, x: i < n, lambda i, x: (i + 1, x * 0.999 + 0.5), (0, x))[1]

        n, x = tf.constant(N_ITER), tf.constant(1.0)
        first = float(loop(n, x))
        return (lambda: loop(n, x)), first

    def lstm_case():
        params, xs_np = lstm_data()
        variables = [tf.Variable(p) for p in params]
        slots = [(tf.Variable(tf.zeros_like(p)), tf.Variable(tf.zeros_like(p))) for p in params]
        step_count = tf.Variable(0.0)
        xs = tf.constant(xs_np)

        @tf.function
        def train_step(xs):
            loss, grads = lstm_loss_and_gradients(tf, variables, xs, BATCH, HIDDEN)
            step_count.assign_add(1.0)
            scale = LR * tf.sqrt(1.0 - B2 ** step_count) / (1.0 - B1 ** step_count)
            for var, grad, (m, v) in zip(variables, grads, slots):
                m.assign(B1 * m + (1.0 - B1) * grad)
                v.assign(B2 * v + (1.0 - B2) * grad * grad)
                var.assign_sub(scale * m / (tf.sqrt(v) + EPS))
            return loss

        first = float(train_step(xs))
        return (lambda: train_step(xs)), first

    return {"while 10k": while_case, "lstm step": lstm_case}


def jax_cases():
    import jax
    import jax.numpy as jnp
    from jax import lax

    def while_case():
        @jax.jit
        def loop(n, x):
            return lax.fori_loop(0, n, lambda i, x: x * 0.999 + 0.5, x)

        n, x = jnp.asarray(N_ITER, jnp.int32), jnp.asarray(1.0, jnp.float32)
        first = float(loop(n, x))
        return (lambda: loop(n, x).block_until_ready()), first

    def lstm_case():
        params, xs_np = lstm_data()
        xs = jnp.asarray(xs_np)

        def loss_fn(p, xs):
            w, u, b = p

            def cell(carry, x):
                h, c = carry
                z = x @ w + h @ u + b
                i, f, g, o = jnp.split(z, 4, axis=1)
                c = jax.nn.sigmoid(f) * c + jax.nn.sigmoid(i) * jnp.tanh(g)
                h = jax.nn.sigmoid(o) * jnp.tanh(c)
                return (h, c), None

            zeros = jnp.zeros((BATCH, HIDDEN), jnp.float32)
            (h, _), _ = lax.scan(cell, (zeros, zeros), xs)
            return jnp.mean(h)

        @jax.jit
        def step(p, m, v, count, xs):
            loss, grads = jax.value_and_grad(loss_fn)(p, xs)
            count = count + 1.0
            scale = LR * jnp.sqrt(1.0 - B2 ** count) / (1.0 - B1 ** count)
            m = [B1 * a + (1.0 - B1) * g for a, g in zip(m, grads)]
            v = [B2 * a + (1.0 - B2) * g * g for a, g in zip(v, grads)]
            p = [a - scale * mm / (jnp.sqrt(vv) + EPS) for a, mm, vv in zip(p, m, v)]
            return p, m, v, count, loss

        state = {"p": [jnp.asarray(a) for a in params], "m": [jnp.zeros_like(a) for a in params],
                 "v": [jnp.zeros_like(a) for a in params], "count": jnp.asarray(0.0, jnp.float32)}

        def call():
            state["p"], state["m"], state["v"], state["count"], loss = step(
                state["p"], state["m"], state["v"], state["count"], xs)
            return loss.block_until_ready()

        return call, float(call())

    return {"while 10k": while_case, "lstm step": lstm_case}


def torch_cases():
    import torch

    torch.set_num_threads(os.cpu_count())

    def lstm_case():
        params, xs_np = lstm_data()
        ps = [torch.tensor(a, requires_grad=True) for a in params]
        ms = [torch.zeros_like(a) for a in ps]
        vs = [torch.zeros_like(a) for a in ps]
        xs = torch.from_numpy(xs_np)

        def loss_fn(xs):
            w, u, b = ps
            h = torch.zeros(BATCH, HIDDEN)
            c = torch.zeros(BATCH, HIDDEN)
            for t in range(xs.shape[0]):
                z = xs[t] @ w + h @ u + b
                i, f, g, o = torch.chunk(z, 4, dim=1)
                c = torch.sigmoid(f) * c + torch.sigmoid(i) * torch.tanh(g)
                h = torch.sigmoid(o) * torch.tanh(c)
            return h.mean()

        compiled = torch.compile(loss_fn)
        count = [0]

        def step():
            loss = compiled(xs)
            loss.backward()
            count[0] += 1
            scale = LR * (1.0 - B2 ** count[0]) ** 0.5 / (1.0 - B1 ** count[0])
            with torch.no_grad():
                for p, m, v in zip(ps, ms, vs):
                    m.mul_(B1).add_(p.grad, alpha=1.0 - B1)
                    v.mul_(B2).addcmul_(p.grad, p.grad, value=1.0 - B2)
                    p.sub_(scale * m / (v.sqrt() + EPS))
                    p.grad = None
            return loss.detach()

        return step, float(step())

    return {"lstm step": lstm_case}


def time_calls(call, seconds, burst):
    for _ in range(2):
        call()
    times = []
    end = time.perf_counter() + seconds
    while time.perf_counter() < end or len(times) < 5:
        t0 = time.perf_counter()
        for _ in range(burst):
            call()
        times.append((time.perf_counter() - t0) / burst)
    return statistics.median(times)


def worker(framework, quick):
    if framework == "ember":
        import ember

        cases, version = tf_cases(ember), ember.__version__
    elif framework == "tensorflow":
        import tensorflow

        cases, version = tf_cases(tensorflow), tensorflow.__version__
    elif framework == "jax":
        import jax

        cases, version = jax_cases(), jax.__version__
    elif framework == "torch":
        import torch

        cases, version = torch_cases(), torch.__version__
    else:
        raise ValueError(framework)
    refs = {"while 10k": loop_reference(), "lstm step": lstm_reference_loss(*lstm_data())}
    out = {"version": version, "cases": {}}
    for name, build in cases.items():
        try:
            call, first = build()
            err = abs(first - refs[name]) / (1 + abs(refs[name]))
            seconds = 1.0 if quick else 3.0
            out["cases"][name] = {"time": time_calls(call, seconds, 3 if name == "lstm step" else 10),
                                  "error": err}
        except Exception as e:  # noqa: BLE001 - one failing case must not hide the others
            out["cases"][name] = {"failed": f"{type(e).__name__}: {(str(e).splitlines() or [''])[0][:240]}"}
    print(json.dumps(out))


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--quick", action="store_true")
    parser.add_argument("--worker")
    args = parser.parse_args()
    if args.worker:
        worker(args.worker, args.quick)
        return
    frameworks = ("ember", "tensorflow", "jax", "torch")
    results, lines = run_workers(__file__, frameworks, ["--quick"] if args.quick else [])
    print(f"bench/control_flow.py: {os.cpu_count()} CPU threads; "
          + ", ".join(f"{fw} {r['version']}" for fw, r in results.items()))
    for line in lines:
        print(line)
    print(f"{'case':<11} {'framework':<11} {'ms':>10} {'vs ember':>9}  check")
    for case in ("while 10k", "lstm step"):
        ember_time = results.get("ember", {}).get("cases", {}).get(case, {}).get("time")
        for fw, r in results.items():
            c = r["cases"].get(case)
            if c is None:
                continue
            if "failed" in c:
                print(f"{case:<11} {fw:<11} {'FAILED':>10}  {c['failed']}")
                continue
            ratio = f"{c['time'] / ember_time:8.2f}x" if ember_time else f"{'-':>9}"
            check = "ok" if c["error"] < 1e-3 else f"FAIL (error {c['error']:.2e})"
            print(f"{case:<11} {fw:<11} {c['time'] * 1e3:10.3f} {ratio}  {check}")
    print("targets: while 10k: TensorFlow/ember >= 10, JAX/ember >= 1; lstm step: TensorFlow/ember >= 2, "
          "JAX/ember > 1, torch/ember > 1")


if __name__ == "__main__":
    main()
