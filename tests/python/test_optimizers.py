"""ember.keras.optimizers (SGD, Adam) and compat.v1.train.GradientDescentOptimizer against TensorFlow.

The expected values were measured with TensorFlow 2.21 (Keras 3.15): three apply_gradients steps on the
variables W0 and B0 with the gradients GW[k], GB[k] below, printed as the shortest float32 (or float64)
that round-trips. ember gave them bit for bit on x86-64; the tests allow 1e-6."""

import warnings

import numpy as np
import pytest

import ember as tf

W0 = np.array([[0.5, -1.0, 2.0], [1.5, 0.25, -0.75]], np.float32)
B0 = np.array([0.1, -0.2, 0.3], np.float32)
GW = np.array([[[1.0, -2.0, 0.5], [0.1, 3.0, -1.5]],
               [[0.2, -0.1, 0.05], [-0.4, 0.3, 2.5]],
               [[-0.7, 0.9, 0.0], [0.6, -0.2, 0.01]]], np.float32)
GB = np.array([[0.5, -0.5, 4.0], [0.05, 1.0, -0.1], [-1.0, 0.25, 0.3]], np.float32)

CONFIGS = {
    "sgd": ("SGD", dict(learning_rate=0.1)),
    "sgd_momentum": ("SGD", dict(learning_rate=0.1, momentum=0.9)),
    "sgd_nesterov": ("SGD", dict(learning_rate=0.1, momentum=0.9, nesterov=True)),
    "adam": ("Adam", dict()),
    "adam_custom": ("Adam", dict(learning_rate=0.01, beta_1=0.8, beta_2=0.99, epsilon=1e-3)),
    "adam_lr01": ("Adam", dict(learning_rate=0.1)),
    # GW[2][1, 2] ** 2 is below v there: v_hat keeps the larger v, and w[1, 2] and b[2] differ from adam_lr01.
    "adam_amsgrad": ("Adam", dict(learning_rate=0.1, amsgrad=True)),
}

# (W, B) after three steps, from TensorFlow.
EXPECTED_FLOAT32 = {
    "sgd": ([[0.45, -0.88, 1.945], [1.47, -0.06000001, -0.851]],
            [0.14500001, -0.275, -0.12]),
    "sgd_momentum": ([[0.26100004, -0.52900004, 1.8550001], [1.4889001, -0.6, -0.8195]],
                     [0.05500001, -0.2795, -0.79499996]),
    "sgd_nesterov": ([[0.2349, -0.45610002, 1.8145], [1.4600099, -0.82500005, -0.91354996]],
                     [0.104500026, -0.34655005, -1.1055]),
    "adam": ([[0.4980471, -0.9980578, 1.9976866], [1.4992778, 0.24773015, -0.7495227]],
             [0.09857322, -0.19978176, 0.297799]),
    "adam_custom": ([[0.48188207, -0.98191106, 1.9782706], [1.4935514, 0.22839127, -0.74610454]],
                    [0.08729232, -0.19885583, 0.27900752]),
    "adam_lr01": ([[0.30471098, -0.80577344, 1.7686571], [1.4277815, 0.023014236, -0.70226806]],
                  [-0.042678352, -0.17817605, 0.07989659]),
    "adam_amsgrad": ([[0.30471098, -0.80577344, 1.7686857], [1.4277815, 0.023014236, -0.70225674]],
                     [-0.042678352, -0.17817605, 0.079908796]),
}

# The same in float64 (the float32 learning-rate variable is cast to float64, as in TensorFlow).
EXPECTED_FLOAT64 = {
    "sgd_momentum": ([[0.2610000018328429, -0.5290000039041043, 1.85500000115484],
                      [1.4888999978929758, -0.5999999938905238, -0.8195000050663948]],
                     [0.05500000413507226, -0.2795000051185489, -0.794999978840351]),
    "adam_amsgrad": ([[0.3047107587493428, -0.8057732571474994, 1.7686856948108824],
                      [1.4277818584157411, 0.023014158084223947, -0.7022567512425174]],
                     [-0.04267871072014185, -0.1781760370042974, 0.07990872489268433]),
}


def make_optimizer(key):
    cls, kwargs = CONFIGS[key]
    return getattr(tf.keras.optimizers, cls)(**kwargs)


def run_three_steps(optimizer, in_function, dtype=np.float32):
    w = tf.Variable(W0.astype(dtype))
    b = tf.Variable(B0.astype(dtype))

    def step(gw, gb):
        optimizer.apply_gradients(zip([gw, gb], [w, b]))

    if in_function:
        step = tf.function(step)
    for k in range(3):
        step(tf.constant(GW[k].astype(dtype)), tf.constant(GB[k].astype(dtype)))
    return w.numpy(), b.numpy()


@pytest.mark.parametrize("in_function", [False, True], ids=["eager", "function"])
@pytest.mark.parametrize("key", sorted(EXPECTED_FLOAT32))
def test_matches_tensorflow_float32(key, in_function):
    optimizer = make_optimizer(key)
    w, b = run_three_steps(optimizer, in_function)
    expected_w, expected_b = EXPECTED_FLOAT32[key]
    np.testing.assert_allclose(w, expected_w, rtol=1e-6, atol=1e-6)
    np.testing.assert_allclose(b, expected_b, rtol=1e-6, atol=1e-6)
    assert optimizer.iterations.numpy() == 3


@pytest.mark.parametrize("key", sorted(EXPECTED_FLOAT64))
def test_matches_tensorflow_float64(key):
    w, b = run_three_steps(make_optimizer(key), in_function=False, dtype=np.float64)
    assert w.dtype == np.float64
    expected_w, expected_b = EXPECTED_FLOAT64[key]
    np.testing.assert_allclose(w, expected_w, rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(b, expected_b, rtol=1e-12, atol=1e-12)


def test_amsgrad_changes_the_result():
    plain = np.array(EXPECTED_FLOAT32["adam_lr01"][0])
    amsgrad = np.array(EXPECTED_FLOAT32["adam_amsgrad"][0])
    assert np.abs(plain - amsgrad).max() > 1e-5


@pytest.mark.parametrize("key", ["sgd_momentum", "adam_amsgrad"])
def test_eager_and_function_agree_on_a_training_loop(key):
    x = np.random.default_rng(0).normal(size=(8, 2)).astype(np.float32)
    y = np.random.default_rng(1).normal(size=(8, 3)).astype(np.float32)
    results = []
    for in_function in (False, True):
        w, b = tf.Variable(W0), tf.Variable(B0)
        optimizer = make_optimizer(key)

        def step(x, y):
            with tf.GradientTape() as tape:
                loss = tf.reduce_mean(tf.square(tf.tanh(tf.matmul(x, w) + b) - y))
            grads = tape.gradient(loss, [w, b])
            optimizer.apply_gradients(zip(grads, [w, b]))
            return loss

        if in_function:
            step = tf.function(step)
        losses = [float(step(tf.constant(x), tf.constant(y))) for _ in range(5)]
        results.append((w.numpy(), b.numpy(), losses))
    (w_eager, b_eager, loss_eager), (w_fn, b_fn, loss_fn) = results
    np.testing.assert_allclose(w_fn, w_eager, rtol=1e-6, atol=1e-7)
    np.testing.assert_allclose(b_fn, b_eager, rtol=1e-6, atol=1e-7)
    np.testing.assert_allclose(loss_fn, loss_eager, rtol=1e-6)
    assert loss_eager[-1] < loss_eager[0]


def test_none_gradient_is_skipped_with_a_warning():
    optimizer = tf.keras.optimizers.Adam(learning_rate=0.1, name="adam")
    v = tf.Variable([1.0, 2.0], name="v")
    u = tf.Variable(3.0, name="u")
    with pytest.warns(UserWarning, match=r"Gradients do not exist for variables \['u:0'\]"):
        optimizer.apply_gradients(zip([tf.constant([0.5, -0.5]), None], [v, u]))
    assert u.numpy() == 3.0
    np.testing.assert_allclose(v.numpy(), [0.9, 2.1], atol=1e-5)  # Adam's first step is about lr * sign(g)
    assert optimizer.iterations.numpy() == 1
    # As in Keras, slots are built for every variable passed, gradient or not.
    assert [x.name for x in optimizer.variables] == [
        "adam/iteration:0", "adam/learning_rate:0", "adam/v_0_momentum:0", "adam/v_0_velocity:0",
        "adam/u_0_momentum:0", "adam/u_0_velocity:0"]


def test_all_gradients_none_is_an_error():
    optimizer = tf.keras.optimizers.SGD()
    v = tf.Variable(1.0)
    with pytest.raises(ValueError, match="No gradients provided for any variable"):
        optimizer.apply_gradients([(None, v)])


def test_slots_are_created_on_the_first_trace():
    optimizer = tf.keras.optimizers.SGD(learning_rate=0.1, momentum=0.5, name="sgd")
    v = tf.Variable([1.0, -1.0])
    traces = []

    @tf.function
    def step(g):
        traces.append(1)
        return optimizer.apply_gradients([(g, v)])

    assert len(optimizer.variables) == 2  # iterations and learning rate
    step(tf.constant([1.0, 1.0]))
    assert len(traces) == 2  # it created variables, so ember.function traced once more to read them
    step(tf.constant([1.0, 1.0]))
    assert len(traces) == 2
    momentum = optimizer.variables[2]
    assert momentum.name == "sgd/Variable_0_momentum:0"
    np.testing.assert_allclose(momentum.numpy(), [-0.15, -0.15], rtol=1e-6)  # -0.1, then 0.5 * -0.1 - 0.1
    np.testing.assert_allclose(v.numpy(), [0.75, -1.25], rtol=1e-6)
    assert optimizer.iterations.numpy() == 2


def test_slots_created_on_a_later_trace_are_an_error():
    optimizer = tf.keras.optimizers.Adam()
    v = tf.Variable([1.0, 2.0])

    @tf.function
    def step(x, apply):
        if apply:
            optimizer.apply_gradients([(x, v)])
        return x

    step(tf.constant([1.0, 1.0]), False)
    with pytest.raises(ValueError, match="tried to create a variable on a trace other than its first"):
        step(tf.constant([1.0, 1.0]), True)


def test_learning_rate_is_a_variable_read_by_traced_steps():
    optimizer = tf.keras.optimizers.SGD(learning_rate=0.5)
    v = tf.Variable(1.0)
    step = tf.function(lambda: optimizer.apply_gradients([(tf.constant(1.0), v)]))
    step()
    assert v.numpy() == pytest.approx(0.5)
    optimizer.learning_rate = 0.25
    assert optimizer.learning_rate.numpy() == pytest.approx(0.25)
    step()
    assert v.numpy() == pytest.approx(0.25)


def test_callable_learning_rate():
    optimizer = tf.keras.optimizers.SGD(learning_rate=lambda: 0.5, name="sgd")
    v = tf.Variable([1.0, 2.0])
    optimizer.apply_gradients([(tf.constant([1.0, 1.0]), v)])
    np.testing.assert_allclose(v.numpy(), [0.5, 1.5])
    assert [x.name for x in optimizer.variables] == ["sgd/iteration:0"]  # no learning-rate variable


def test_unknown_variable_after_build_is_an_error():
    optimizer = tf.keras.optimizers.SGD()
    optimizer.apply_gradients([(tf.constant(1.0), tf.Variable(1.0))])
    with pytest.raises(ValueError, match="Unknown variable"):
        optimizer.apply_gradients([(tf.constant(1.0), tf.Variable(2.0))])


def test_minimize():
    optimizer = tf.keras.optimizers.SGD(learning_rate=0.1)
    v = tf.Variable([1.0, -2.0])
    optimizer.minimize(lambda: tf.reduce_sum(v * v), [v])
    np.testing.assert_allclose(v.numpy(), [0.8, -1.6], rtol=1e-6)
    with tf.GradientTape() as tape:
        loss = tf.reduce_sum(v * v)
    optimizer.minimize(loss, [v], tape=tape)
    np.testing.assert_allclose(v.numpy(), [0.64, -1.28], rtol=1e-6)
    assert optimizer.iterations.numpy() == 2


def test_arguments_checked_like_keras():
    with pytest.raises(ValueError, match="should be float"):
        tf.keras.optimizers.SGD(learning_rate=1)
    with pytest.raises(ValueError, match="momentum"):
        tf.keras.optimizers.SGD(momentum=1.5)
    with pytest.raises(tf.errors.UnimplementedError, match="gradient_accumulation_steps"):
        tf.keras.optimizers.Adam(gradient_accumulation_steps=2)
    with pytest.raises(ValueError, match="Only one of `clipnorm`, `clipvalue` and `global_clipnorm`"):
        tf.keras.optimizers.Adam(clipnorm=1.0, clipvalue=0.5)
    with pytest.raises(ValueError, match="not recognized"):
        tf.keras.optimizers.Adam(lr=0.1)


def test_get_config_matches_keras():
    config = tf.keras.optimizers.SGD(learning_rate=0.1, momentum=0.9, nesterov=True, name="s").get_config()
    # TensorFlow 2.21's dict:
    assert config == {"name": "s", "learning_rate": 0.10000000149011612, "weight_decay": None, "clipnorm": None,
                      "global_clipnorm": None, "clipvalue": None, "use_ema": False, "ema_momentum": 0.99,
                      "ema_overwrite_frequency": None, "loss_scale_factor": None,
                      "gradient_accumulation_steps": None, "momentum": 0.9, "nesterov": True}
    adam = tf.keras.optimizers.Adam.from_config(tf.keras.optimizers.Adam(amsgrad=True, name="a").get_config())
    assert adam.amsgrad and adam.name == "a" and adam.learning_rate.numpy() == np.float32(0.001)


# ---- compat.v1.train


def test_gradient_descent_optimizer_matches_tensorflow():
    optimizer = tf.compat.v1.train.GradientDescentOptimizer(learning_rate=0.1)
    w, b = tf.Variable(W0), tf.Variable(B0)
    for k in range(3):
        result = optimizer.apply_gradients((g, v) for g, v in zip([tf.constant(GW[k]), tf.constant(GB[k])], [w, b]))
        assert result is None
    expected_w, expected_b = EXPECTED_FLOAT32["sgd"]  # TensorFlow gives the same numbers as Keras' SGD
    np.testing.assert_allclose(w.numpy(), expected_w, rtol=1e-6, atol=1e-6)
    np.testing.assert_allclose(b.numpy(), expected_b, rtol=1e-6, atol=1e-6)


class Dense(tf.Module):
    def __init__(self, n_in, n_out, activation, seed):
        super().__init__()
        self.w = tf.Variable(tf.random.stateless_normal([n_in, n_out], seed=[seed, 0]), name="w")
        self.b = tf.Variable(tf.random.stateless_normal([n_out], seed=[seed, 1]), name="b")
        self.activation = activation

    def __call__(self, x):
        return self.activation(tf.matmul(x, self.w) + self.b)


class MyModel(tf.Module):
    def __init__(self):
        super().__init__()
        self.dense1 = Dense(2, 4, tf.nn.relu, seed=1)
        self.dense2 = Dense(4, 5, tf.tanh, seed=2)

    def __call__(self, x):
        return self.dense2(self.dense1(x))


@pytest.mark.parametrize("in_function", [False, True], ids=["eager", "function"])
def test_gradient_descent_optimizer_seed_example(in_function):
    # The seed's shape: gradients of the model's outputs, applied from a generator of (grad, var) pairs.
    model = MyModel()
    x = tf.constant([[2.0, 3.0]])
    optimizer = tf.compat.v1.train.GradientDescentOptimizer(learning_rate=0.01)

    def step(x):
        with tf.GradientTape() as tape:
            outputs = model(x)
        gradient = tape.gradient(outputs, model.trainable_variables)
        optimizer.apply_gradients((grad, var) for grad, var in zip(gradient, model.trainable_variables))
        return gradient

    if in_function:
        step = tf.function(step)
    before = [v.numpy() for v in model.trainable_variables]
    gradient = [g.numpy() for g in step(x)]
    assert len(gradient) == 4 and any(np.abs(g).max() > 0 for g in gradient)
    for v, v0, g in zip(model.trainable_variables, before, gradient):
        np.testing.assert_allclose(v.numpy(), v0 - np.float32(0.01) * g, rtol=1e-6, atol=1e-7)


def test_gradient_descent_optimizer_minimize_and_global_step():
    optimizer = tf.compat.v1.train.GradientDescentOptimizer(learning_rate=lambda: 0.1)
    v = tf.Variable([1.0, -2.0])
    global_step = tf.Variable(0, dtype=tf.int64)
    assert optimizer.minimize(lambda: tf.reduce_sum(v * v), global_step=global_step) is None  # reads v
    np.testing.assert_allclose(v.numpy(), [0.8, -1.6], rtol=1e-6)
    optimizer.minimize(lambda: tf.reduce_sum(v * v), var_list=[v], global_step=global_step)
    np.testing.assert_allclose(v.numpy(), [0.64, -1.28], rtol=1e-6)
    assert global_step.numpy() == 2
    assert optimizer.get_name() == "GradientDescent"


def test_gradient_descent_optimizer_errors():
    optimizer = tf.compat.v1.train.GradientDescentOptimizer(0.1)
    v, u = tf.Variable([1.0, 2.0]), tf.Variable(3.0)
    optimizer.apply_gradients([(tf.constant([1.0, 1.0]), v), (None, u)])  # None skipped silently, as TF 1.x
    np.testing.assert_allclose(v.numpy(), [0.9, 1.9], rtol=1e-6)
    assert u.numpy() == 3.0
    with pytest.raises(ValueError, match="No gradients provided for any variable"):
        optimizer.apply_gradients([(None, v)])
    with pytest.raises(ValueError, match="No variables provided"):
        optimizer.apply_gradients([])
    with pytest.raises(RuntimeError, match="should be a function when eager execution is enabled"):
        optimizer.minimize(tf.reduce_sum(v * v), var_list=[v])
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # unlike Keras, TF 1.x does not warn about None gradients
        optimizer.apply_gradients([(tf.constant(1.0), u), (None, v)])
