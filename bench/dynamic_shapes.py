"""Unknown batch dimension vs static shapes (issue 13): the same MLP step traced with
``input_signature=[TensorSpec([None, 784]), TensorSpec([None, 10])]`` and traced for the concrete batch,
side by side in one run, one subprocess per framework:

    python3 bench/dynamic_shapes.py [--quick]

Workloads (784-256-256-10, relu, relu, logits, batch 512, float32):
- train step: softmax cross-entropy, gradients by GradientTape inside the function, plain SGD on the
  variables (``assign_sub``); the step returns the loss.
- forward: the logits alone.

Target: the dynamic trace within 10% of the static one (ratio <= 1.10), and at least as fast as JAX ``jit``
and ``torch.compile`` on the same step. TensorFlow runs the same TF2 code; JAX (``jit`` of a
``value_and_grad`` step; a dynamic batch is a retrace there, so it gets only the static row) and PyTorch
(``torch.compile`` of the loss with ``dynamic=True`` vs ``dynamic=False``, its AOTAutograd backward run by
``.backward()``, the update in place; the forward under ``no_grad``) run when installed, and the output says
when they are not.

The ratio is measured in interleaved rounds (a round times a burst of static calls, then a burst of
dynamic ones) and the median of the rounds' ratios is printed, so that load from other processes on a small
machine, which comes and goes, touches both sides alike. Every first call is checked against a float64
NumPy reference (the loss of one step from the same initial weights, the logits), so a fast wrong answer
shows as FAIL. A case that raises is reported with its error and the others still run (a gradient that
needs a static shape shows up that way).
"""
import os

os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")  # before NumPy starts its BLAS pool

import argparse  # noqa: E402
import json  # noqa: E402
import statistics  # noqa: E402
import time  # noqa: E402

import numpy as np  # noqa: E402

from workers import run_workers  # noqa: E402

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
SIZES = (784, 256, 256, 10)
BATCH = 512
LR = 0.01
TARGET = 1.10


def make_data():
    rng = np.random.default_rng(0)
    params = []
    for a, b in zip(SIZES[:-1], SIZES[1:]):
        params.append((rng.standard_normal((a, b)) * np.sqrt(2.0 / a)).astype(np.float32))
        params.append((rng.standard_normal((b,)) * 0.01).astype(np.float32))
    x = rng.standard_normal((BATCH, SIZES[0])).astype(np.float32)
    y = np.eye(SIZES[-1], dtype=np.float32)[rng.integers(0, SIZES[-1], BATCH)]
    return params, x, y


def numpy_reference(params, x, y):
    """(loss of one step, logits) in float64."""
    p = [a.astype(np.float64) for a in params]
    h = x.astype(np.float64)
    for i in range(0, len(p) - 2, 2):
        h = np.maximum(h @ p[i] + p[i + 1], 0)
    logits = h @ p[-2] + p[-1]
    z = logits - logits.max(axis=1, keepdims=True)
    logp = z - np.log(np.exp(z).sum(axis=1, keepdims=True))
    return float(-(y * logp).sum(axis=1).mean()), logits


class DynamicFailed:
    """The [None] trace of a case raised: the static one is still timed, and the error reported."""

    def __init__(self, error):
        self.message = f"{type(error).__name__}: {(str(error).splitlines() or [''])[0][:240]}"


# ---------------------------------------------------------------------------------------------------------
# Workers: each returns cases {name: (static_call, dynamic_call or None, first outputs as NumPy)}.

def tf_cases(tf, params, x, y):
    def build():
        variables = [tf.Variable(p) for p in params]

        def forward(xb):
            h = xb
            for i in range(0, len(variables) - 2, 2):
                h = tf.nn.relu(tf.matmul(h, variables[i]) + variables[i + 1])
            return tf.matmul(h, variables[-2]) + variables[-1]

        def train_step(xb, yb):
            with tf.GradientTape() as tape:
                loss = tf.reduce_mean(tf.nn.softmax_cross_entropy_with_logits(labels=yb, logits=forward(xb)))
            grads = tape.gradient(loss, variables)
            for v, g in zip(variables, grads):
                v.assign_sub(LR * g)
            return loss

        return variables, forward, train_step

    dyn_x = tf.TensorSpec([None, SIZES[0]], tf.float32)
    dyn_y = tf.TensorSpec([None, SIZES[-1]], tf.float32)
    xt, yt = tf.constant(x), tf.constant(y)
    cases = {}

    def train():
        _, _, step_s = build()
        _, _, step_d = build()  # its own variables: both start from the same weights
        static = tf.function(step_s)
        dynamic = tf.function(step_d, input_signature=[dyn_x, dyn_y])
        first = [float(static(xt, yt).numpy())]
        try:
            first.append(float(dynamic(xt, yt).numpy()))
        except Exception as e:  # noqa: BLE001 - the static row still runs
            return (lambda: static(xt, yt)), DynamicFailed(e), first
        return (lambda: static(xt, yt)), (lambda: dynamic(xt, yt)), first

    def forward():
        _, fwd, _ = build()
        static = tf.function(fwd)
        dynamic = tf.function(fwd, input_signature=[dyn_x])
        first = [static(xt).numpy(), dynamic(xt).numpy()]
        return (lambda: static(xt)), (lambda: dynamic(xt)), first

    cases["train step"] = train
    cases["forward"] = forward
    return cases


def jax_cases(params, x, y):
    import jax
    import jax.numpy as jnp

    def forward(p, xb):
        h = xb
        for i in range(0, len(p) - 2, 2):
            h = jax.nn.relu(h @ p[i] + p[i + 1])
        return h @ p[-2] + p[-1]

    def loss_fn(p, xb, yb):
        return -jnp.mean(jnp.sum(yb * jax.nn.log_softmax(forward(p, xb)), axis=1))

    @jax.jit
    def step(p, xb, yb):
        loss, grads = jax.value_and_grad(loss_fn)(p, xb, yb)
        return [a - LR * g for a, g in zip(p, grads)], loss

    fwd = jax.jit(forward)
    xj, yj = jnp.asarray(x), jnp.asarray(y)

    def train():
        state = {"p": [jnp.asarray(a) for a in params]}
        state["p"], loss = step(state["p"], xj, yj)

        def call():
            state["p"], out = step(state["p"], xj, yj)
            return out.block_until_ready()

        return call, None, [float(loss), float(loss)]

    def forward_case():
        p = [jnp.asarray(a) for a in params]
        out = np.asarray(fwd(p, xj))
        return (lambda: fwd(p, xj).block_until_ready()), None, [out, out]

    return {"train step": train, "forward": forward_case}


def torch_cases(params, x, y):
    import torch

    torch.set_num_threads(os.cpu_count())

    def build():
        ps = [torch.tensor(a, requires_grad=True) for a in params]

        def forward(xb):
            h = xb
            for i in range(0, len(ps) - 2, 2):
                h = torch.relu(h @ ps[i] + ps[i + 1])
            return h @ ps[-2] + ps[-1]

        def loss_fn(xb, yb):
            return torch.nn.functional.cross_entropy(forward(xb), yb)

        return ps, forward, loss_fn

    xt, yt = torch.from_numpy(x), torch.from_numpy(y)

    def train():
        # torch.compile's own training idiom: the compiled loss carries its AOTAutograd backward, which
        # .backward() runs; the SGD update is a few in-place ops on the parameters.
        def make(dynamic):
            ps, _, loss_fn = build()
            compiled = torch.compile(loss_fn, dynamic=dynamic)

            def step():
                loss = compiled(xt, yt)
                loss.backward()
                with torch.no_grad():
                    for p in ps:
                        p.sub_(LR * p.grad)
                        p.grad = None
                return loss.detach()

            return step

        static, dynamic = make(False), make(True)
        first = [float(static()), float(dynamic())]
        return static, dynamic, first

    def forward_case():
        fwd = build()[1]
        static = torch.compile(fwd, dynamic=False)
        dynamic = torch.compile(fwd, dynamic=True)

        def inference(f):
            def call():
                with torch.no_grad():  # as the other frameworks' forward: no autograd record
                    return f(xt)
            return call

        with torch.no_grad():
            first = [static(xt).numpy(), dynamic(xt).numpy()]
        return inference(static), inference(dynamic), first

    return {"train step": train, "forward": forward_case}


def time_interleaved(static, dynamic, seconds, burst=5):
    """Median per-call time of each side and the median of the per-round ratios dynamic / static."""
    for _ in range(3):
        static()
        if dynamic:
            dynamic()
    s_times, d_times, ratios = [], [], []
    end = time.perf_counter() + seconds
    while time.perf_counter() < end or len(s_times) < 5:
        t0 = time.perf_counter()
        for _ in range(burst):
            static()
        s = (time.perf_counter() - t0) / burst
        s_times.append(s)
        if dynamic:
            t0 = time.perf_counter()
            for _ in range(burst):
                dynamic()
            d = (time.perf_counter() - t0) / burst
            d_times.append(d)
            ratios.append(d / s)
    return (statistics.median(s_times), statistics.median(d_times) if d_times else None,
            statistics.median(ratios) if ratios else None)


def worker(framework, quick):
    params, x, y = make_data()
    if framework == "ember":
        import ember

        cases, version = tf_cases(ember, params, x, y), ember.__version__
        path = os.path.dirname(os.path.dirname(ember.__file__))
    elif framework == "tensorflow":
        import tensorflow

        cases, version = tf_cases(tensorflow, params, x, y), tensorflow.__version__
    elif framework == "jax":
        import jax

        cases, version = jax_cases(params, x, y), jax.__version__
    elif framework == "torch":
        import torch

        cases, version = torch_cases(params, x, y), torch.__version__
    else:
        raise ValueError(framework)
    ref_loss, ref_logits = numpy_reference(params, x, y)
    out = {"version": version, "cases": {}}
    if framework == "ember":
        out["path"] = path
    for name, build in cases.items():
        try:
            static, dynamic, first = build()
            dynamic_failed = dynamic.message if isinstance(dynamic, DynamicFailed) else None
            dynamic = None if dynamic_failed else dynamic
            ref = ref_loss if name == "train step" else ref_logits
            errs = [float(np.max(np.abs(np.asarray(f, np.float64) - ref) / (1 + np.abs(ref)))) for f in first]
            s, d, ratio = time_interleaved(static, dynamic, 1.0 if quick else 4.0)
            out["cases"][name] = {"static": s, "dynamic": d, "ratio": ratio, "error": max(errs),
                                  "dynamic_failed": dynamic_failed}
        except Exception as e:  # noqa: BLE001 - one failing case must not hide the others
            out["cases"][name] = {"failed": f"{type(e).__name__}: {(str(e).splitlines() or [''])[0][:240]}"}
    print(json.dumps(out))


# ---------------------------------------------------------------------------------------------------------

def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--quick", action="store_true")
    parser.add_argument("--worker")
    args = parser.parse_args()
    if args.worker:
        worker(args.worker, args.quick)
        return
    results, lines = run_workers(__file__, ("ember", "tensorflow", "jax", "torch"), ["--quick"] if args.quick else [],
                                 disturbed="absolute timings are disturbed (the interleaved ratios less so)")
    versions = ", ".join(f"{fw} {r['version']} ({r['path']})" if "path" in r else f"{fw} {r['version']}"
                         for fw, r in results.items())
    print(f"bench/dynamic_shapes.py: MLP {'-'.join(map(str, SIZES))}, batch {BATCH}, float32; "
          f"{os.cpu_count()} CPU threads; {versions}")
    for line in lines:
        print(line)
    print(f"{'case':<12} {'framework':<11} {'static ms':>10} {'[None] ms':>10} {'ratio':>7}  check")
    for case in ("train step", "forward"):
        for fw, r in results.items():
            c = r["cases"].get(case, {})
            if "failed" in c:
                print(f"{case:<12} {fw:<11} FAILED: {c['failed']}")
                continue
            ok = "ok" if c["error"] < 1e-4 else f"FAIL (rel. error {c['error']:.1e})"
            dyn = (f"{c['dynamic'] * 1e3:10.3f}" if c["dynamic"] is not None
                   else f"{'FAILED':>10}" if c.get("dynamic_failed") else f"{'(retrace)':>10}")
            ratio = f"{c['ratio']:7.3f}" if c["ratio"] is not None else f"{'-':>7}"
            print(f"{case:<12} {fw:<11} {c['static'] * 1e3:10.3f} {dyn} {ratio}  {ok}")
    print("Ratios:")
    for case in ("train step", "forward"):
        e = results.get("ember", {}).get("cases", {}).get(case, {})
        if e.get("ratio") is None:
            why = e.get("dynamic_failed") or e.get("failed") or "no result"
            print(f"  {case}: ember's [None] trace did not run ({why})")
            continue
        verdict = "meets" if e["ratio"] <= TARGET else "misses"
        print(f"  {case}: ember [None] / static = {e['ratio']:.3f} ({verdict} the target <= {TARGET:.2f})")
        for fw in ("tensorflow", "jax", "torch"):
            o = results.get(fw, {}).get("cases", {}).get(case, {})
            if o.get("dynamic"):
                print(f"  {case}: ember [None] / {fw} [None] = {e['dynamic'] / o['dynamic']:.3f}")
            elif o.get("static"):
                print(f"  {case}: ember [None] / {fw} static = {e['dynamic'] / o['static']:.3f}")


if __name__ == "__main__":
    main()
