"""ember.keras.optimizers against tf_keras (Keras 2): a few steps on the same variables and gradients give the
same variables and slots, for every optimizer and for the options every optimizer takes (clipping, weight
decay, moving averages, schedules), eagerly and inside ember.function (one trace); get / serialize."""

import numpy as np
import pytest
import tf_keras

import ember
from ember.keras import optimizers

W0 = np.array([[0.5, -1.0, 2.0], [1.5, 0.25, -0.75]], np.float32)
B0 = np.array([0.1, -0.2, 0.3], np.float32)
GW = np.array([[[1.0, -2.0, 0.5], [0.1, 3.0, -1.5]],
               [[0.2, -0.1, 0.05], [-0.4, 0.3, 2.5]],
               [[-0.7, 0.9, 0.0], [0.6, -0.2, 0.01]],
               [[0.3, 0.3, -0.3], [2.0, -1.0, 0.5]]], np.float32)
GB = np.array([[0.5, -0.5, 4.0], [0.05, 1.0, -0.1], [-1.0, 0.25, 0.3], [0.0, 0.7, -2.0]], np.float32)

# key: (class, kwargs, {ember slot list attribute: tf_keras slot list attribute})
CASES = {
    "sgd": ("SGD", dict(learning_rate=0.1), {}),
    "sgd_momentum": ("SGD", dict(learning_rate=0.1, momentum=0.9), {"momentums": "momentums"}),
    "sgd_nesterov": ("SGD", dict(learning_rate=0.1, momentum=0.9, nesterov=True), {"momentums": "momentums"}),
    "adam": ("Adam", dict(learning_rate=0.1), {"_momentums": "_momentums", "_velocities": "_velocities"}),
    "adam_amsgrad": ("Adam", dict(learning_rate=0.1, amsgrad=True),
                     {"_momentums": "_momentums", "_velocities": "_velocities", "_velocity_hats": "_velocity_hats"}),
    "adamw": ("AdamW", dict(learning_rate=0.1, weight_decay=0.05),
              {"_momentums": "_momentums", "_velocities": "_velocities"}),
    "adamax": ("Adamax", dict(learning_rate=0.1, beta_2=0.9), {"_m": "_m", "_u": "_u"}),
    "nadam": ("Nadam", dict(learning_rate=0.1), {"_momentums": "_momentums", "_velocities": "_velocities"}),
    "lion": ("Lion", dict(learning_rate=0.05), {"_momentums": "momentums"}),
    "rmsprop": ("RMSprop", dict(learning_rate=0.05), {"_velocities": "_velocities"}),
    "rmsprop_centered_momentum": ("RMSprop", dict(learning_rate=0.05, momentum=0.5, centered=True, rho=0.8),
                                  {"_velocities": "_velocities", "_momentums": "_momentums",
                                   "_average_gradients": "_average_gradients"}),
    "adagrad": ("Adagrad", dict(learning_rate=0.1, initial_accumulator_value=0.2), {"_accumulators": "_accumulators"}),
    "adadelta": ("Adadelta", dict(learning_rate=1.0, rho=0.9),
                 {"_accumulated_grads": "_accumulated_grads", "_accumulated_delta_vars": "_accumulated_delta_vars"}),
    "ftrl": ("Ftrl", dict(learning_rate=0.1, l1_regularization_strength=0.01, l2_regularization_strength=0.02,
                          l2_shrinkage_regularization_strength=0.03, beta=0.1),
             {"_accumulators": "_accumulators", "_linears": "_linears"}),
    "sgd_clipnorm": ("SGD", dict(learning_rate=0.1, clipnorm=1.0), {}),
    "adam_clipvalue": ("Adam", dict(learning_rate=0.1, clipvalue=0.5),
                       {"_momentums": "_momentums", "_velocities": "_velocities"}),
    "sgd_global_clipnorm": ("SGD", dict(learning_rate=0.1, momentum=0.5, global_clipnorm=2.0),
                            {"momentums": "momentums"}),
    "sgd_weight_decay": ("SGD", dict(learning_rate=0.1, weight_decay=0.1), {}),
    "adam_ema": ("Adam", dict(learning_rate=0.1, use_ema=True, ema_momentum=0.9),
                 {"_momentums": "_momentums", "_model_variables_moving_average": "_model_variables_moving_average"}),
    "sgd_ema_overwrite": ("SGD", dict(learning_rate=0.1, use_ema=True, ema_momentum=0.5, ema_overwrite_frequency=2),
                          {"_model_variables_moving_average": "_model_variables_moving_average"}),
}

SCHEDULES = {
    "exponential": ("ExponentialDecay", dict(initial_learning_rate=0.1, decay_steps=2, decay_rate=0.5)),
    "exponential_staircase": ("ExponentialDecay", dict(initial_learning_rate=0.1, decay_steps=2, decay_rate=0.5,
                                                       staircase=True)),
    "piecewise": ("PiecewiseConstantDecay", dict(boundaries=[1, 2], values=[0.1, 0.05, 0.01])),
    "polynomial": ("PolynomialDecay", dict(initial_learning_rate=0.1, decay_steps=3, end_learning_rate=0.01,
                                           power=2.0)),
    "polynomial_cycle": ("PolynomialDecay", dict(initial_learning_rate=0.1, decay_steps=2, cycle=True)),
    "inverse_time": ("InverseTimeDecay", dict(initial_learning_rate=0.1, decay_steps=1, decay_rate=0.5)),
    "inverse_time_staircase": ("InverseTimeDecay", dict(initial_learning_rate=0.1, decay_steps=2, decay_rate=0.5,
                                                        staircase=True)),
    "cosine": ("CosineDecay", dict(initial_learning_rate=0.1, decay_steps=3, alpha=0.1)),
    "cosine_warmup": ("CosineDecay", dict(initial_learning_rate=0.0, decay_steps=4, warmup_target=0.2,
                                          warmup_steps=2)),
    "cosine_restarts": ("CosineDecayRestarts", dict(initial_learning_rate=0.1, first_decay_steps=1, t_mul=2.0,
                                                    m_mul=0.5, alpha=0.1)),
    "cosine_restarts_t1": ("CosineDecayRestarts", dict(initial_learning_rate=0.1, first_decay_steps=2, t_mul=1.0)),
}


def run(lib, cls, kwargs, steps=4, in_function=False):
    optimizer = getattr(lib.keras.optimizers if lib is ember else tf_keras.optimizers, cls)(**kwargs)
    w, b = lib.Variable(W0, name="w"), lib.Variable(B0, name="b")

    def step(gw, gb):
        optimizer.apply_gradients(zip([gw, gb], [w, b]))

    traces = []
    run_step = step
    if in_function:
        def counted(gw, gb):
            traces.append(1)
            step(gw, gb)
        run_step = ember.function(counted)
    for k in range(steps):
        run_step(lib.constant(GW[k]), lib.constant(GB[k]))
    return optimizer, w, b, traces


def assert_same_state(key, mine, theirs):
    _, _, slots = CASES[key]
    (em_opt, em_w, em_b), (tf_opt, tf_w, tf_b) = mine, theirs
    np.testing.assert_allclose(em_w.numpy(), tf_w.numpy(), rtol=1e-6, atol=1e-6, err_msg="w")
    np.testing.assert_allclose(em_b.numpy(), tf_b.numpy(), rtol=1e-6, atol=1e-6, err_msg="b")
    assert int(em_opt.iterations.numpy()) == int(tf_opt.iterations.numpy())
    for em_attr, tf_attr in slots.items():
        em_slots, tf_slots = getattr(em_opt, em_attr), getattr(tf_opt, tf_attr)
        assert len(em_slots) == len(tf_slots) == 2, em_attr
        for a, b in zip(em_slots, tf_slots):
            np.testing.assert_allclose(a.numpy(), b.numpy(), rtol=1e-6, atol=1e-6, err_msg=em_attr)


@pytest.mark.parametrize("in_function", [False, True], ids=["eager", "function"])
@pytest.mark.parametrize("key", sorted(CASES))
def test_matches_tf_keras(key, in_function):
    cls, kwargs, _ = CASES[key]
    em_opt, em_w, em_b, traces = run(ember, cls, kwargs, in_function=in_function)
    tf_opt, tf_w, tf_b, _ = run(_TF, cls, kwargs)
    assert_same_state(key, (em_opt, em_w, em_b), (tf_opt, tf_w, tf_b))
    if in_function:
        # A first trace that makes slots (or moving averages) is followed by one more that reads them.
        makes_variables = bool(CASES[key][2])
        assert len(traces) == (2 if makes_variables else 1)


class _TF:
    """tf_keras' optimizers on TensorFlow's variables, with run()'s interface."""
    import tensorflow as _tf
    Variable = _tf.Variable
    constant = _tf.constant


@pytest.mark.parametrize("in_function", [False, True], ids=["eager", "function"])
@pytest.mark.parametrize("schedule", sorted(SCHEDULES))
def test_schedules_drive_the_optimizer_as_tf_keras(schedule, in_function):
    name, kwargs = SCHEDULES[schedule]
    em_opt, em_w, em_b, traces = run(ember, "SGD", dict(learning_rate=getattr(optimizers.schedules, name)(**kwargs),
                                                        weight_decay=0.1), in_function=in_function)
    tf_opt, tf_w, tf_b, _ = run(_TF, "SGD", dict(learning_rate=getattr(tf_keras.optimizers.schedules, name)(**kwargs),
                                                 weight_decay=0.1))
    np.testing.assert_allclose(em_w.numpy(), tf_w.numpy(), rtol=1e-6, atol=1e-7)
    np.testing.assert_allclose(em_b.numpy(), tf_b.numpy(), rtol=1e-6, atol=1e-7)
    if in_function:
        assert len(traces) == 1  # the step is read when the function runs: no retrace as it grows


@pytest.mark.parametrize("schedule", sorted(SCHEDULES))
def test_schedule_values_and_config_match_tf_keras(schedule):
    name, kwargs = SCHEDULES[schedule]
    mine, theirs = getattr(optimizers.schedules, name)(**kwargs), getattr(tf_keras.optimizers.schedules, name)(**kwargs)
    for step in range(12):
        np.testing.assert_allclose(mine(ember.constant(step, ember.int64)).numpy(), theirs(step).numpy(), rtol=1e-6,
                                   atol=1e-8, err_msg=f"step {step}")
    assert optimizers.schedules.serialize(mine) == tf_keras.optimizers.schedules.serialize(theirs)
    again = optimizers.schedules.deserialize(optimizers.schedules.serialize(mine))
    assert type(again) is type(mine) and again.get_config() == mine.get_config()


def test_schedule_in_get_config_round_trips():
    schedule = optimizers.schedules.ExponentialDecay(0.1, 10, 0.5)
    config = optimizers.Adam(learning_rate=schedule, name="a").get_config()
    assert config["learning_rate"] == tf_keras.optimizers.schedules.serialize(
        tf_keras.optimizers.schedules.ExponentialDecay(0.1, 10, 0.5))
    again = optimizers.Adam.from_config(config)
    assert isinstance(again._learning_rate, optimizers.schedules.ExponentialDecay)
    np.testing.assert_allclose(again.learning_rate.numpy(), 0.1)


def test_learning_rate_of_a_schedule_follows_iterations():
    optimizer = optimizers.SGD(learning_rate=optimizers.schedules.PiecewiseConstantDecay([0], [1.0, 0.5]))
    v = ember.Variable([1.0])
    assert optimizer.learning_rate.numpy() == 1.0
    optimizer.apply_gradients([(ember.constant([1.0]), v)])
    assert optimizer.learning_rate.numpy() == 0.5
    np.testing.assert_allclose(v.numpy(), [0.0])


def test_a_schedule_is_not_settable_to_a_float_as_keras():
    optimizer = optimizers.SGD(learning_rate=optimizers.schedules.ExponentialDecay(0.1, 10, 0.5))
    with pytest.raises(TypeError, match="learning rate is not settable"):
        optimizer.learning_rate = 0.5
    optimizer.learning_rate = optimizers.schedules.InverseTimeDecay(0.2, 1, 1.0)  # another schedule is fine
    assert optimizer.learning_rate.numpy() == pytest.approx(0.2)


def test_exclude_from_weight_decay():
    w, bias = ember.Variable([1.0, 2.0], name="kernel"), ember.Variable([1.0, 2.0], name="bias")
    optimizer = optimizers.AdamW(learning_rate=0.1, weight_decay=0.5)
    optimizer.exclude_from_weight_decay(var_names=["bias"])
    optimizer.apply_gradients([(ember.constant([0.0, 0.0]), w), (ember.constant([0.0, 0.0]), bias)])
    np.testing.assert_allclose(w.numpy(), [0.95, 1.9], rtol=1e-6)  # decayed by lr * wd = 0.05
    np.testing.assert_allclose(bias.numpy(), [1.0, 2.0])
    with pytest.raises(ValueError, match="before the optimizer is built"):
        optimizer.exclude_from_weight_decay(var_names=["kernel"])


def test_finalize_variable_values_copies_the_moving_average():
    optimizer = optimizers.SGD(learning_rate=0.5, use_ema=True, ema_momentum=0.5)
    v = ember.Variable([1.0])
    optimizer.apply_gradients([(ember.constant([1.0]), v)])  # v: 0.5; average: 0.5 * 1 + 0.5 * 0.5
    optimizer.finalize_variable_values([v])
    np.testing.assert_allclose(v.numpy(), [0.75])


def test_constraints_apply_after_the_step():
    v = ember.Variable([1.0, -1.0])
    v.constraint = lambda x: ember.clip_by_value(x, 0.0, 10.0)
    optimizers.SGD(learning_rate=1.0).apply_gradients([(ember.constant([-2.0, 2.0]), v)])
    np.testing.assert_allclose(v.numpy(), [3.0, 0.0])


def test_loss_scale_factor_divides_the_gradients():
    v = ember.Variable([1.0])
    optimizers.SGD(learning_rate=1.0, loss_scale_factor=4.0).apply_gradients([(ember.constant([2.0]), v)])
    np.testing.assert_allclose(v.numpy(), [0.5])


def test_empty_gradient_list_is_a_no_op_as_tf_keras():
    optimizer = optimizers.Adam()
    assert optimizer.apply_gradients([]) is optimizer.iterations
    assert int(optimizer.iterations.numpy()) == 0


# ---- get / serialize / deserialize


@pytest.mark.parametrize("name", ["adam", "Adam", "ADAM", "sgd", "SGD", "rmsprop", "adamw", "adagrad", "adadelta",
                                  "adamax", "nadam", "ftrl", "lion"])
def test_get_makes_a_fresh_optimizer_with_defaults_from_a_name(name):
    optimizer = optimizers.get(name)
    assert type(optimizer).__name__.lower() == name.lower()
    assert optimizers.get(name) is not optimizer
    theirs = getattr(tf_keras.optimizers, type(optimizer).__name__)().get_config()
    mine = optimizer.get_config()
    for key in set(mine) & set(theirs) - {"name", "learning_rate"}:
        assert mine[key] == theirs[key], key
    np.testing.assert_allclose(mine["learning_rate"], theirs["learning_rate"])


@pytest.mark.parametrize("key", sorted(CASES))
def test_config_round_trips(key):
    cls, kwargs, _ = CASES[key]
    optimizer = getattr(optimizers, cls)(**kwargs)
    again = optimizers.get(optimizers.serialize(optimizer))
    assert type(again) is type(optimizer) and again.get_config() == optimizer.get_config()


def test_reads_tf_keras_configs():
    for key in ("adam_amsgrad", "rmsprop_centered_momentum", "ftrl", "sgd_clipnorm"):
        cls, kwargs, _ = CASES[key]
        theirs = tf_keras.optimizers.serialize(getattr(tf_keras.optimizers, cls)(**kwargs))
        mine = optimizers.deserialize(theirs)
        assert type(mine).__name__ == cls
        for name, value in theirs["config"].items():
            if hasattr(mine, name) and name not in ("name", "learning_rate"):
                assert getattr(mine, name) == value, name


def test_get_bad_identifiers():
    with pytest.raises(ValueError, match="Could not interpret optimizer identifier: 3"):
        optimizers.get(3)
    with pytest.raises(ValueError, match="Unknown optimizer: 'adamm'"):
        optimizers.get("adamm")
    sgd = optimizers.SGD()
    assert optimizers.get(sgd) is sgd


# ---- bad input


def test_bad_arguments_name_what_was_expected():
    with pytest.raises(ValueError, match=r"`clipnorm` must be a positive float or None. Received: clipnorm=-1"):
        optimizers.SGD(clipnorm=-1.0)
    with pytest.raises(ValueError, match="Only one of `clipnorm`, `clipvalue` and `global_clipnorm`"):
        optimizers.SGD(clipnorm=1.0, global_clipnorm=1.0)
    with pytest.raises(ValueError, match="`ema_momentum` must be in the range"):
        optimizers.SGD(use_ema=True, ema_momentum=2.0)
    with pytest.raises(ValueError, match="weight_decay"):
        optimizers.AdamW(weight_decay=None)
    with pytest.raises(ValueError, match="learning_rate_power"):
        optimizers.Ftrl(learning_rate_power=0.5)
    with pytest.raises(ValueError, match="length of boundaries should be 1 less"):
        optimizers.schedules.PiecewiseConstantDecay([1, 2], [0.1])


def test_gradient_of_the_wrong_shape_is_an_error_not_a_broadcast():
    v = ember.Variable(np.zeros((2, 3), np.float32), name="w")
    with pytest.raises(ember.errors.InvalidArgumentError,
                       match=r"SGD.apply_gradients: the gradient of w:0 must have the variable's shape \[2, 3\]; "
                             r"got shape \[3\]"):
        optimizers.SGD().apply_gradients([(ember.constant([1.0, 2.0, 3.0]), v)])
    with pytest.raises(ember.errors.InvalidArgumentError, match="must be a floating tensor; got dtype int32"):
        optimizers.SGD().apply_gradients([(ember.constant(np.ones((2, 3), np.int32)), v)])
    with pytest.raises(TypeError, match="expects \\(gradient, variable\\) pairs"):
        optimizers.SGD().apply_gradients([ember.constant(1.0)])


# ---- checkpoints: the same keys as TF 2.21's tf.keras (Keras 3) writes, and values that restore


@pytest.mark.parametrize("key", ["rmsprop_centered_momentum", "nadam", "adagrad", "adadelta", "adamax", "ftrl",
                                 "lion", "adamw", "adam_amsgrad", "adam_ema"])
def test_checkpoint_keys_match_tensorflow(tmp_path, key):
    import tensorflow as tf
    cls, kwargs, _ = CASES[key]

    def save(lib, directory):
        w, b = lib.Variable(W0), lib.Variable(B0)
        optimizer = getattr(lib.keras.optimizers, cls)(**kwargs)
        for k in range(2):
            optimizer.apply_gradients(zip([lib.constant(GW[k]), lib.constant(GB[k])], [w, b]))
        lib.train.Checkpoint(optimizer=optimizer).write(str(directory / "ck"))
        return str(directory / "ck"), w.numpy(), b.numpy()

    def state(path):
        reader = tf.train.load_checkpoint(path)
        return {k: reader.get_tensor(k) for k in reader.get_variable_to_shape_map() if "OBJECT_GRAPH" not in k}

    path, w2, b2 = save(ember, tmp_path / "em")
    mine, theirs = state(path), state(save(tf, tmp_path / "tf")[0])
    assert sorted(mine) == sorted(theirs)
    assert all(mine[k].shape == theirs[k].shape for k in theirs)
    # and a fresh optimizer restores them: its third step continues where the saved one stopped
    w, b = ember.Variable(w2), ember.Variable(b2)
    fresh = getattr(optimizers, cls)(**kwargs)
    ember.train.Checkpoint(optimizer=fresh).read(path)
    fresh.apply_gradients(zip([ember.constant(GW[2]), ember.constant(GB[2])], [w, b]))
    _, want_w, want_b, _ = run(ember, cls, kwargs, steps=3)
    assert int(fresh.iterations.numpy()) == 3
    np.testing.assert_allclose(w.numpy(), want_w.numpy(), rtol=1e-6, atol=1e-7)
    np.testing.assert_allclose(b.numpy(), want_b.numpy(), rtol=1e-6, atol=1e-7)


@pytest.mark.parametrize("key", sorted(CASES))
def test_built_eagerly_a_traced_step_traces_once(key):
    """optimizer.build(variables) makes the slots up front (as fit does), so the step's function traces once."""
    cls, kwargs, _ = CASES[key]
    optimizer = getattr(optimizers, cls)(**kwargs)
    w, b = ember.Variable(W0), ember.Variable(B0)
    optimizer.build([w, b])
    traces = []

    @ember.function
    def step(gw, gb):
        traces.append(1)
        optimizer.apply_gradients(zip([gw, gb], [w, b]))

    for k in range(3):
        step(ember.constant(GW[k]), ember.constant(GB[k]))
    assert len(traces) == 1
    _, want_w, want_b, _ = run(ember, cls, kwargs, steps=3)
    np.testing.assert_allclose(w.numpy(), want_w.numpy(), rtol=1e-6, atol=1e-7)
    np.testing.assert_allclose(b.numpy(), want_b.numpy(), rtol=1e-6, atol=1e-7)
