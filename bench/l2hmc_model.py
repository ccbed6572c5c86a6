"""The L2HMC model shared by the benchmarks (bench/autodiff.py trains it, bench/executor.py samples with it).

200 chains on a strongly correlated 2-D Gaussian, 10 leapfrog steps per transition, each step calling
width-10 MLPs three times and taking the energy's gradient with autodiff. ``tf_style`` is written once in
TF2 style and runs with ``import ember as tf`` and with TensorFlow; ``jax_port`` and ``torch_port`` follow
the same maths line for line.
"""
import types

import numpy as np

D, WIDTH, BATCH, STEPS, EPS = 2, 10, 200, 10, 0.1
# The precision matrix of [[1, 0.99], [0.99, 1]], written out: np.linalg.inv would start NumPy's OpenBLAS
# thread pool, whose idle spinning takes a core from whichever framework is being measured.
PREC = (np.array([[1.0, -0.99], [-0.99, 1.0]]) / (1 - 0.99 ** 2)).astype(np.float32)


def l2hmc_params(rng):
    """w1, b1 of the shared hidden layer, then the scale, translation and transformation heads."""
    shapes = [(D + 1, WIDTH), (WIDTH,), (WIDTH, D), (WIDTH, D), (WIDTH, D)]
    return [rng.normal(0, 0.1, s).astype(np.float32) for s in shapes]


def tf_style(tf, params):
    """The model in TF2 style over ``params`` (variables or tensors); ``tf`` is ember or TensorFlow.

    Returns a namespace with ``energy(x)``, ``sample(x0, v0)`` (the leapfrog chain: final x, v),
    ``transition(x0, v0, u)`` (one Metropolis-Hastings step with uniforms ``u``: next x, acceptance
    probability) and ``loss(x0, v0)`` (the training objective: expected squared jump).
    """
    w1, b1, ws, wt, wq = params
    prec = tf.constant(PREC)
    ones = tf.ones([BATCH, 1])

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

    def sample(x0, v0):
        x, v = x0, v0
        for i in range(STEPS):
            x, v = leapfrog(x, v, float(i) / STEPS)
        return x, v

    def accept_prob(x0, v0, x, v):
        h0 = energy(x0) + 0.5 * tf.reduce_sum(v0 * v0, axis=1)
        h1 = energy(x) + 0.5 * tf.reduce_sum(v * v, axis=1)
        return tf.minimum(1.0, tf.exp(h0 - h1))

    def transition(x0, v0, u):
        x, v = sample(x0, v0)
        p = accept_prob(x0, v0, x, v)
        return tf.where(tf.expand_dims(u < p, 1), x, x0), p

    def loss(x0, v0):
        x, v = sample(x0, v0)
        jump = tf.reduce_sum((x - x0) ** 2, axis=1)
        return -tf.reduce_mean(accept_prob(x0, v0, x, v) * jump)

    return types.SimpleNamespace(energy=energy, sample=sample, transition=transition, loss=loss)


def jax_port(jax, jnp):
    """The same model for JAX; every function takes the parameter list ``p`` first."""
    prec = jnp.asarray(PREC)

    def energy(x):
        return 0.5 * jnp.sum((x @ prec) * x, axis=1)

    def net(p, x, t):
        w1, b1, ws, wt, wq = p
        h = jax.nn.relu(jnp.concatenate([x, t * jnp.ones((BATCH, 1))], axis=1) @ w1 + b1)
        return jnp.tanh(h @ ws), h @ wt, jnp.tanh(h @ wq)

    grad_energy = jax.grad(lambda x: jnp.sum(energy(x)))

    def sample(p, x0, v0):
        x, v = x0, v0
        for i in range(STEPS):
            t = float(i) / STEPS
            s, tr, q = net(p, x, t)
            v = v * jnp.exp(0.5 * EPS * s) - 0.5 * EPS * (grad_energy(x) * jnp.exp(EPS * q) + tr)
            s, tr, q = net(p, v, t)
            x = x * jnp.exp(EPS * s) + EPS * (v * jnp.exp(EPS * q) + tr)
            s, tr, q = net(p, x, t)
            v = v * jnp.exp(0.5 * EPS * s) - 0.5 * EPS * (grad_energy(x) * jnp.exp(EPS * q) + tr)
        return x, v

    def accept_prob(x0, v0, x, v):
        h0 = energy(x0) + 0.5 * jnp.sum(v0 * v0, axis=1)
        h1 = energy(x) + 0.5 * jnp.sum(v * v, axis=1)
        return jnp.minimum(1.0, jnp.exp(h0 - h1))

    def transition(p, x0, v0, u):
        x, v = sample(p, x0, v0)
        a = accept_prob(x0, v0, x, v)
        return jnp.where((u < a)[:, None], x, x0), a

    def loss(p, x0, v0):
        x, v = sample(p, x0, v0)
        return -jnp.mean(accept_prob(x0, v0, x, v) * jnp.sum((x - x0) ** 2, axis=1))

    return types.SimpleNamespace(energy=energy, sample=sample, transition=transition, loss=loss)


def torch_port(torch, params, energy_grad):
    """The same model for PyTorch over ``params``.

    ``energy_grad`` picks how the energy's gradient is taken: ``"func"`` uses ``torch.func.grad``, which
    torch.compile traces into its graph; ``"autograd"`` uses ``torch.autograd.grad``, keeping the graph
    (``create_graph``) only when a parameter requires grad, so that a training step's ``backward()``
    differentiates through it while sampling does not pay for it.
    """
    prec = torch.from_numpy(PREC)
    ones = torch.ones(BATCH, 1)
    create_graph = any(p.requires_grad for p in params)

    def energy(x):
        return 0.5 * torch.sum((x @ prec) * x, dim=1)

    def net(x, t):
        w1, b1, ws, wt, wq = params
        h = torch.relu(torch.cat([x, t * ones], dim=1) @ w1 + b1)
        return torch.tanh(h @ ws), h @ wt, torch.tanh(h @ wq)

    if energy_grad == "func":
        grad_energy = torch.func.grad(lambda x: energy(x).sum())
    else:
        def grad_energy(x):
            if not x.requires_grad:
                x = x.detach().requires_grad_()
            return torch.autograd.grad(energy(x).sum(), x, create_graph=create_graph)[0]

    def sample(x0, v0):
        x, v = x0, v0
        for i in range(STEPS):
            t = float(i) / STEPS
            s, tr, q = net(x, t)
            v = v * torch.exp(0.5 * EPS * s) - 0.5 * EPS * (grad_energy(x) * torch.exp(EPS * q) + tr)
            s, tr, q = net(v, t)
            x = x * torch.exp(EPS * s) + EPS * (v * torch.exp(EPS * q) + tr)
            s, tr, q = net(x, t)
            v = v * torch.exp(0.5 * EPS * s) - 0.5 * EPS * (grad_energy(x) * torch.exp(EPS * q) + tr)
        return x, v

    def accept_prob(x0, v0, x, v):
        h0 = energy(x0) + 0.5 * torch.sum(v0 * v0, dim=1)
        h1 = energy(x) + 0.5 * torch.sum(v * v, dim=1)
        return torch.clamp(torch.exp(h0 - h1), max=1.0)

    def transition(x0, v0, u):
        x, v = sample(x0, v0)
        a = accept_prob(x0, v0, x, v)
        return torch.where((u < a)[:, None], x, x0), a

    def loss(x0, v0):
        x, v = sample(x0, v0)
        return -torch.mean(accept_prob(x0, v0, x, v) * torch.sum((x - x0) ** 2, dim=1))

    return types.SimpleNamespace(energy=energy, sample=sample, transition=transition, loss=loss)


def numpy_transition(params, x0, v0, u):
    """A float64 NumPy reference for ``transition`` (the energy's gradient written out: x @ PREC)."""
    w1, b1, ws, wt, wq = [np.asarray(p, np.float64) for p in params]
    prec = PREC.astype(np.float64)
    x, v = x0.astype(np.float64), v0.astype(np.float64)

    def energy(z):
        return 0.5 * np.sum((z @ prec) * z, axis=1)

    def net(z, t):
        h = np.maximum(np.concatenate([z, np.full((BATCH, 1), t)], axis=1) @ w1 + b1, 0.0)
        return np.tanh(h @ ws), h @ wt, np.tanh(h @ wq)

    for i in range(STEPS):
        t = float(i) / STEPS
        s, tr, q = net(x, t)
        v = v * np.exp(0.5 * EPS * s) - 0.5 * EPS * ((x @ prec) * np.exp(EPS * q) + tr)
        s, tr, q = net(v, t)
        x = x * np.exp(EPS * s) + EPS * (v * np.exp(EPS * q) + tr)
        s, tr, q = net(x, t)
        v = v * np.exp(0.5 * EPS * s) - 0.5 * EPS * ((x @ prec) * np.exp(EPS * q) + tr)
    x0d, v0d = x0.astype(np.float64), v0.astype(np.float64)
    h0 = energy(x0d) + 0.5 * np.sum(v0d * v0d, axis=1)
    h1 = energy(x) + 0.5 * np.sum(v * v, axis=1)
    a = np.minimum(1.0, np.exp(h0 - h1))
    return np.where((u < a)[:, None], x, x0d), a
