"""SimpleRNN, LSTM, GRU and Bidirectional (python/ember/keras/layers/recurrent.py) against tf_keras with the
same weights: forward, gradients, eager vs ember.function, None batch; return_sequences, return_state,
go_backwards, initial_state, masks; the unrolled loop and the while_loop (unknown number of steps) agree;
bad inputs raise ember.errors naming the layer."""

import numpy as np
import pytest
import tensorflow
import tf_keras
from test_keras_layers_harness import check_layer

import ember as tf
from ember.keras.layers import recurrent as R


def data(*shape, seed=0):
    return np.random.default_rng(seed).standard_normal(shape).astype(np.float32)


OPTIONS = [
    dict(),
    dict(return_sequences=True),
    dict(return_state=True),
    dict(return_sequences=True, return_state=True, go_backwards=True),
    dict(use_bias=False, activation="relu"),
]
LAYERS = ["SimpleRNN", "LSTM", "GRU"]


@pytest.mark.parametrize("kwargs", OPTIONS, ids=[str(i) for i in range(len(OPTIONS))])
@pytest.mark.parametrize("name", LAYERS)
def test_recurrent_matches_tf_keras(name, kwargs):
    x = data(3, 6, 4)
    layer, _ = check_layer(lambda: getattr(R, name)(5, **kwargs), lambda: getattr(tf_keras.layers, name)(5, **kwargs),
                           [x])
    want = getattr(tf_keras.layers, name)(5, **kwargs).compute_output_shape((None, 6, 4))
    got = layer.compute_output_shape((None, 6, 4))
    assert [list(s) for s in (want if isinstance(want, list) else [want])] == \
        [s.as_list() for s in (got if isinstance(got, list) else [got])]


@pytest.mark.parametrize("kwargs", [dict(reset_after=False), dict(reset_after=False, return_sequences=True),
                                    dict(recurrent_activation="tanh", activation="sigmoid")])
def test_gru_variants_match_tf_keras(kwargs):
    check_layer(lambda: R.GRU(4, **kwargs), lambda: tf_keras.layers.GRU(4, **kwargs), [data(2, 5, 3)])


def test_lstm_unit_forget_bias_and_weight_layout():
    layer = R.LSTM(3)
    layer(tf.zeros([1, 2, 4]))
    kernel, recurrent, bias = layer.get_weights()
    assert kernel.shape == (4, 12) and recurrent.shape == (3, 12) and bias.shape == (12,)
    np.testing.assert_array_equal(bias, [0, 0, 0, 1, 1, 1, 0, 0, 0, 0, 0, 0])
    gru = R.GRU(3)
    gru(tf.zeros([1, 2, 4]))
    assert [w.shape for w in gru.get_weights()] == [(4, 9), (3, 9), (2, 9)]


@pytest.mark.parametrize("name", LAYERS)
def test_initial_state_matches_tf_keras(name):
    x = data(3, 5, 4)
    n_states = 2 if name == "LSTM" else 1
    states = [data(3, 6, seed=10 + i) for i in range(n_states)]
    tf_layer = getattr(tf_keras.layers, name)(6, return_sequences=True, return_state=True)
    want = tf_layer(tensorflow.constant(x), initial_state=[tensorflow.constant(s) for s in states])
    layer = getattr(R, name)(6, return_sequences=True, return_state=True)
    layer(tf.constant(x), initial_state=[tf.constant(s) for s in states])
    layer.set_weights(tf_layer.get_weights())
    got = layer(tf.constant(x), initial_state=[tf.constant(s) for s in states])
    for g, w in zip(got, want):
        np.testing.assert_allclose(g.numpy(), w.numpy(), atol=1e-5)


@pytest.mark.parametrize("zero_output", [False, True])
@pytest.mark.parametrize("name", LAYERS)
def test_mask_matches_tf_keras(name, zero_output):
    x = data(3, 6, 4)
    mask = np.array([[1, 1, 1, 0, 0, 0], [1, 1, 1, 1, 1, 1], [1, 0, 1, 1, 0, 0]], bool)
    kwargs = dict(return_sequences=True, return_state=True, zero_output_for_mask=zero_output)
    tf_layer = getattr(tf_keras.layers, name)(5, **kwargs)
    want = tf_layer(x, mask=mask)
    layer = getattr(R, name)(5, **kwargs)
    layer(tf.constant(x))
    layer.set_weights(tf_layer.get_weights())
    for run in (lambda: layer(tf.constant(x), mask=tf.constant(mask)),
                tf.function(lambda: layer(tf.constant(x), mask=tf.constant(mask)))):
        for g, w in zip(run(), want):
            np.testing.assert_allclose(g.numpy(), w.numpy(), atol=1e-5)


@pytest.mark.parametrize("name", LAYERS)
@pytest.mark.parametrize("kwargs", [dict(return_sequences=True, return_state=True), dict(go_backwards=True)])
def test_unknown_number_of_steps_runs_the_while_loop_with_the_same_values(name, kwargs):
    """A sequence whose length is unknown while tracing runs as a while_loop; values and gradients are the
    unrolled loop's (and tf_keras's)."""
    x = data(2, 7, 3)
    tf_layer = getattr(tf_keras.layers, name)(4, **kwargs)
    want = tf_layer(x)
    layer = getattr(R, name)(4, **kwargs)
    layer(tf.constant(x))
    layer.set_weights(tf_layer.get_weights())

    @tf.function(input_signature=[tf.TensorSpec([None, None, 3], tf.float32)])
    def loop(x):
        with tf.GradientTape() as tape:
            tape.watch(x)
            outs = layer(x)
            outs = outs if isinstance(outs, list) else [outs]
            loss = tf.add_n([tf.reduce_sum(o * o) for o in outs])
        return outs, tape.gradient(loss, [x] + list(layer.trainable_weights))

    def unrolled(x):
        with tf.GradientTape() as tape:
            tape.watch(x)
            outs = layer(x)
            outs = outs if isinstance(outs, list) else [outs]
            loss = tf.add_n([tf.reduce_sum(o * o) for o in outs])
        return outs, tape.gradient(loss, [x] + list(layer.trainable_weights))

    outs, grads = loop(tf.constant(x))
    outs2, grads2 = unrolled(tf.constant(x))
    for g, w in zip(outs, want if isinstance(want, list) else [want]):
        np.testing.assert_allclose(g.numpy(), w.numpy(), atol=1e-5)
    for a, b in zip(grads, grads2):
        np.testing.assert_allclose(a.numpy(), b.numpy(), atol=1e-4, rtol=1e-4)


MERGES = ["concat", "sum", "ave", "mul", None]


@pytest.mark.parametrize("merge_mode", MERGES, ids=[str(m) for m in MERGES])
@pytest.mark.parametrize("name", ["LSTM", "GRU"])
def test_bidirectional_matches_tf_keras(name, merge_mode):
    x = data(2, 5, 3)
    check_layer(lambda: R.Bidirectional(getattr(R, name)(4, return_sequences=True), merge_mode=merge_mode),
                lambda: tf_keras.layers.Bidirectional(getattr(tf_keras.layers, name)(4, return_sequences=True),
                                                      merge_mode=merge_mode), [x])


def test_bidirectional_return_state_and_last_output():
    x = data(2, 5, 3)
    check_layer(lambda: R.Bidirectional(R.LSTM(4, return_state=True)),
                lambda: tf_keras.layers.Bidirectional(tf_keras.layers.LSTM(4, return_state=True)), [x])


def test_bidirectional_with_mask_matches_tf_keras():
    x = data(2, 5, 3)
    mask = np.array([[1, 1, 1, 0, 0], [1, 1, 1, 1, 1]], bool)
    ref = tf_keras.layers.Bidirectional(tf_keras.layers.GRU(4, return_sequences=True))
    want = ref(x, mask=mask).numpy()
    layer = R.Bidirectional(R.GRU(4, return_sequences=True))
    layer(tf.constant(x))
    layer.set_weights(ref.get_weights())
    np.testing.assert_allclose(layer(tf.constant(x), mask=tf.constant(mask)).numpy(), want, atol=1e-5)


def test_rnn_over_a_cell_matches_the_layer():
    x = data(2, 5, 3)
    layer = R.LSTM(4, return_sequences=True)
    want = layer(tf.constant(x)).numpy()
    rnn = R.RNN(R.LSTMCell(4), return_sequences=True)
    rnn(tf.constant(x))
    rnn.set_weights(layer.get_weights())
    np.testing.assert_allclose(rnn(tf.constant(x)).numpy(), want, atol=1e-6)


def test_dropout_only_in_training():
    x = data(4, 5, 3)
    layer = R.LSTM(4, dropout=0.5, recurrent_dropout=0.5)
    a = layer(tf.constant(x)).numpy()
    np.testing.assert_array_equal(a, layer(tf.constant(x), training=False).numpy())
    assert not np.allclose(a, layer(tf.constant(x), training=True).numpy())


@pytest.mark.parametrize("name", LAYERS)
def test_bad_inputs_raise_naming_the_layer(name):
    layer = getattr(R, name)(4, name="rec")
    with pytest.raises(tf.errors.InvalidArgumentError,
                       match=rf"{name} 'rec': expected an input of rank 3.*got shape \(2, 3\)"):
        layer(tf.zeros([2, 3]))
    layer(tf.zeros([2, 5, 3]))
    with pytest.raises(tf.errors.InvalidArgumentError, match=rf"{name} 'rec': expected 3 input features.*got 6"):
        layer(tf.zeros([2, 5, 6]))
    with pytest.raises(tf.errors.InvalidArgumentError, match=rf"{name} 'rec': expected initial_state of"):
        layer(tf.zeros([2, 5, 3]), initial_state=[tf.zeros([2, 4])] * 3)


@pytest.mark.parametrize("kwargs", [dict(), dict(return_sequences=True, return_state=True)])
def test_lstm_own_backward_pass_equals_autodiff(kwargs):
    """The standard LSTM runs a hand-written backward pass (Note [The LSTM's own backward pass]); an LSTM
    whose activations are the same functions under other names takes autodiff's. Both give one gradient."""
    x = data(3, 8, 4)
    fast = R.LSTM(5, **kwargs)
    slow = R.LSTM(5, activation=lambda v: tf.tanh(v), recurrent_activation=lambda v: tf.sigmoid(v), **kwargs)
    assert R._is_standard_lstm(fast.cell) and not R._is_standard_lstm(slow.cell)
    fast(tf.constant(x))
    slow(tf.constant(x))
    slow.set_weights(fast.get_weights())

    def grads(layer):
        xt = tf.constant(x)
        with tf.GradientTape() as tape:
            tape.watch(xt)
            outs = layer(xt)
            outs = outs if isinstance(outs, list) else [outs]
            loss = tf.add_n([tf.reduce_sum(o * (i + 1.0) * o) for i, o in enumerate(outs)])
        return [g.numpy() for g in tape.gradient(loss, [xt] + list(layer.trainable_weights))]

    for a, b in zip(grads(fast), grads(slow)):
        np.testing.assert_allclose(a, b, atol=1e-5, rtol=1e-5)


BLOCK_LSTM = [dict(), dict(use_bias=False, return_sequences=True, return_state=True)]


@pytest.mark.parametrize("kwargs", BLOCK_LSTM, ids=["default", "no_bias_sequences_states"])
def test_float32_lstm_is_one_block_lstm_op_with_tf_keras_gradients(kwargs):
    """Note [How the loop runs]: the standard float32 LSTM is BlockLSTMV2, its gradient BlockLSTMGradV2 (in a
    traced training step too), with tf_keras' values and gradients."""
    x = data(3, 7, 4)
    layer = R.LSTM(5, **kwargs)
    ref = tf_keras.layers.LSTM(5, **kwargs)
    layer(tf.constant(x))
    ref(x)
    ref.set_weights(layer.get_weights())

    def step(xt):
        with tf.GradientTape() as tape:
            tape.watch(xt)
            outs = layer(xt)
            outs = outs if isinstance(outs, list) else [outs]
            loss = tf.add_n([tf.reduce_sum(o * (i + 1.0) * o) for i, o in enumerate(outs)])
        return tape.gradient(loss, [xt] + layer.trainable_weights)

    ops = {op.type for op in tf.function(step).get_concrete_function(tf.constant(x)).graph.get_operations()}
    assert {"BlockLSTMV2", "BlockLSTMGradV2"} <= ops
    with tensorflow.GradientTape() as tape:
        xt = tensorflow.constant(x)
        tape.watch(xt)
        outs = ref(xt)
        outs = outs if isinstance(outs, list) else [outs]
        loss = tensorflow.add_n([tensorflow.reduce_sum(o * (i + 1.0) * o) for i, o in enumerate(outs)])
    want = tape.gradient(loss, [xt] + ref.trainable_weights)
    for got in (step(tf.constant(x)), tf.function(step)(tf.constant(x))):
        for a, b in zip(got, want):
            np.testing.assert_allclose(a.numpy(), b.numpy(), rtol=1e-4, atol=1e-5)


@pytest.mark.parametrize("kwargs", BLOCK_LSTM, ids=["default", "no_bias_sequences_states"])
def test_lstm_second_order_gradient_matches_tf_keras(kwargs):
    """BlockLSTMGradV2 has no gradient (as TensorFlow's), so under a recording outer tape the LSTM's gradient
    runs on ops that differentiate again: the gradient of a gradient is tf_keras', not None."""
    x = data(2, 5, 3)
    layer = R.LSTM(4, **kwargs)
    ref = tf_keras.layers.LSTM(4, **kwargs)
    layer(tf.constant(x))
    ref(x)
    ref.set_weights(layer.get_weights())

    for a, b in zip(_second_order(tf, layer, x)[1:], _second_order(tensorflow, ref, x)[1:]):
        assert a is not None
        np.testing.assert_allclose(a.numpy(), b.numpy(), rtol=1e-4, atol=1e-6)


def _second_order(lib, layer, x):
    """[d y / d x, then d |d y / d x|^2 / d (x, weights)] of y = sum_i (i + 1) sum(output_i^2)."""
    xt = lib.constant(x)
    with lib.GradientTape() as outer:
        outer.watch(xt)
        with lib.GradientTape() as inner:
            inner.watch(xt)
            outs = layer(xt)
            outs = outs if isinstance(outs, list) else [outs]
            y = lib.add_n([lib.reduce_sum(o * o) * (i + 1.0) for i, o in enumerate(outs)])
        g = inner.gradient(y, xt)
        gg = lib.reduce_sum(g * g)
    return [g] + outer.gradient(gg, [xt] + layer.trainable_weights)


@pytest.mark.parametrize("return_sequences", [False, True])
def test_float64_lstm_second_order_gradient_matches_tf_keras(return_sequences):
    """Other dtypes run the unrolled steps with their own backward pass (_lstm_sequence), whose saved gate
    values were computed with no tape recording: under a recording outer tape the gradient is autodiff's
    instead, so the gradient of a gradient is tf_keras'."""
    x = data(2, 5, 3).astype(np.float64)
    layer = R.LSTM(4, dtype="float64", return_sequences=return_sequences, return_state=True)
    ref = tf_keras.layers.LSTM(4, dtype="float64", return_sequences=return_sequences, return_state=True)
    layer(tf.constant(x))
    ref(x)
    ref.set_weights(layer.get_weights())

    for a, b in zip(_second_order(tf, layer, x), _second_order(tensorflow, ref, x)):
        np.testing.assert_allclose(a.numpy(), b.numpy(), rtol=1e-9, atol=1e-12)


def test_embedding_mask_reaches_the_lstm_as_in_tf_keras():
    from ember.keras import layers

    ids = np.array([[3, 4, 5, 0, 0], [1, 2, 0, 0, 0]])
    emb, lstm = layers.Embedding(20, 6, mask_zero=True), R.LSTM(4, return_sequences=True)
    got = lstm(emb(tf.constant(ids)))
    ref_emb, ref_lstm = tf_keras.layers.Embedding(20, 6, mask_zero=True), tf_keras.layers.LSTM(4, return_sequences=True)
    ref_lstm(ref_emb(ids))
    ref_emb.set_weights(emb.get_weights())
    ref_lstm.set_weights(lstm.get_weights())
    np.testing.assert_allclose(got.numpy(), ref_lstm(ref_emb(ids)).numpy(), atol=1e-5)


# ---- stateful=True (Note [Stateful RNNs] in recurrent.py)

STATEFUL = [("SimpleRNN", dict()), ("LSTM", dict(return_sequences=True)), ("GRU", dict(return_state=True)),
            ("LSTM", dict(go_backwards=True, return_state=True)), ("GRU", dict(reset_after=False))]


def _outputs(value):
    return [np.asarray(v) for v in (value if isinstance(value, (list, tuple)) else [value])]


@pytest.mark.parametrize("name,kwargs", STATEFUL, ids=[f"{n}-{i}" for i, (n, _) in enumerate(STATEFUL)])
@pytest.mark.parametrize("in_function", [False, True])
def test_stateful_matches_tf_keras_over_consecutive_calls(name, kwargs, in_function):
    ref = getattr(tf_keras.layers, name)(4, stateful=True, **kwargs)
    ours = getattr(R, name)(4, stateful=True, **kwargs)
    first = data(2, 5, 3, seed=0)
    ref(first)
    ours(tf.constant(first))
    ours.set_weights(ref.get_weights())
    ref.reset_states()
    ours.reset_states()
    call = tf.function(lambda x: ours(x)) if in_function else ours
    for i in range(4):  # the state carries over: each call differs from a fresh layer's
        x = data(2, 5, 3, seed=i + 1)
        want = _outputs(ref(x))
        got = _outputs(call(tf.constant(x)))
        for g, w in zip(got, want):
            np.testing.assert_allclose(g, w, atol=1e-5, rtol=1e-5)
        for s, r in zip(ours.states, ref.states):
            np.testing.assert_allclose(s.numpy(), r.numpy(), atol=1e-5, rtol=1e-5)
    ref.reset_states()
    ours.reset_states()
    assert all(not np.any(s.numpy()) for s in ours.states)
    x = data(2, 5, 3, seed=9)
    for g, w in zip(_outputs(call(tf.constant(x))), _outputs(ref(x))):
        np.testing.assert_allclose(g, w, atol=1e-5, rtol=1e-5)


def test_stateful_states_are_not_weights_and_reset_takes_values():
    layer = R.LSTM(3, stateful=True)
    x = data(2, 4, 5)
    layer(tf.constant(x))
    assert len(layer.weights) == 3 and len(layer.non_trainable_weights) == 0
    assert [s.shape.as_list() for s in layer.states] == [[2, 3], [2, 3]]
    layer.reset_states([np.ones((2, 3), np.float32), np.full((2, 3), 2.0, np.float32)])
    ref = tf_keras.layers.LSTM(3, stateful=True)
    ref(x)
    ref.set_weights(layer.get_weights())
    ref.reset_states([np.ones((2, 3), np.float32), np.full((2, 3), 2.0, np.float32)])
    np.testing.assert_allclose(layer(tf.constant(x)).numpy(), ref(x).numpy(), atol=1e-5)
    assert R.LSTM(3).states == [None, None]
    with pytest.raises(ValueError, match="expects 2 states, but it received 1"):
        layer.reset_states([np.ones((2, 3), np.float32)])
    with pytest.raises(ValueError, match=r"State 0 is incompatible.*\(2, 3\).*\(3, 3\)"):
        layer.reset_states([np.ones((3, 3), np.float32)] * 2)
    with pytest.raises(AttributeError, match="must be stateful"):
        R.GRU(2).reset_states()


def test_stateful_batch_size_must_be_known_and_fixed():
    with pytest.raises(ValueError, match="needs to know its batch size"):
        tf.keras.Sequential([R.SimpleRNN(2, stateful=True, input_shape=(3, 4))])
    with pytest.raises(ValueError, match="needs to know its batch size"):
        R.GRU(2, stateful=True)(tf.keras.Input((3, 4)))
    layer = R.GRU(2, stateful=True, name="stateful_gru")
    layer(tf.zeros([2, 3, 4]))
    with pytest.raises(tf.errors.InvalidArgumentError, match="stateful_gru.*2 examples per batch.*got 3"):
        layer(tf.zeros([3, 3, 4]))


def _stateful_model(keras, batch_input=True):
    if batch_input:
        inputs = keras.Input((3, 2), batch_size=4)
        x = keras.layers.LSTM(5, stateful=True, return_sequences=True)(inputs)
        x = keras.layers.GRU(3, stateful=True)(x)
        return keras.Model(inputs, keras.layers.Dense(1)(x))
    return keras.Sequential([keras.layers.SimpleRNN(4, stateful=True, batch_input_shape=(4, 3, 2)),
                             keras.layers.Dense(1)])


@pytest.mark.parametrize("batch_input", [True, False], ids=["functional", "sequential"])
def test_stateful_fit_and_predict_carry_states_across_batches_as_tf_keras(batch_input):
    ref = _stateful_model(tf_keras, batch_input)
    ours = _stateful_model(tf.keras, batch_input)
    ours.set_weights(ref.get_weights())
    x = data(12, 3, 2, seed=3)
    y = data(12, 1, seed=4)
    ref.compile(tf_keras.optimizers.SGD(0.05), "mse")
    ours.compile(tf.keras.optimizers.SGD(0.05), "mse")
    want = ref.fit(x, y, batch_size=4, epochs=3, shuffle=False, verbose=0).history["loss"]
    got = ours.fit(x, y, batch_size=4, epochs=3, shuffle=False, verbose=0).history["loss"]
    np.testing.assert_allclose(got, want, rtol=1e-4)
    for s, r in zip([s for layer in ours.layers for s in getattr(layer, "states", [])],
                    [s for layer in ref.layers for s in getattr(layer, "states", [])]):
        np.testing.assert_allclose(s.numpy(), r.numpy(), atol=1e-4)
    np.testing.assert_allclose(ours.predict(x, batch_size=4, verbose=0), ref.predict(x, batch_size=4, verbose=0),
                               atol=1e-4)
    ref.reset_states()
    ours.reset_states()
    assert all(not np.any(s.numpy()) for layer in ours.layers for s in getattr(layer, "states", []) or [])
    np.testing.assert_allclose(ours.predict(x, batch_size=4, verbose=0), ref.predict(x, batch_size=4, verbose=0),
                               atol=1e-4)


def test_stateful_bidirectional_matches_tf_keras_and_resets_both_directions():
    x = data(2, 4, 3)
    ref = tf_keras.layers.Bidirectional(tf_keras.layers.LSTM(2, stateful=True, return_sequences=True))
    ours = R.Bidirectional(R.LSTM(2, stateful=True, return_sequences=True))
    ref(x)
    ours(tf.constant(x))
    ours.set_weights(ref.get_weights())
    ref.reset_states()
    ours.reset_states()
    for i in range(3):
        x = data(2, 4, 3, seed=i + 1)
        np.testing.assert_allclose(ours(tf.constant(x)).numpy(), ref(x).numpy(), atol=1e-5)
    ours.reset_states()
    assert all(not np.any(s.numpy()) for layer in (ours.forward_layer, ours.backward_layer) for s in layer.states)
    with pytest.raises(AttributeError, match="must be stateful"):
        R.Bidirectional(R.GRU(2)).reset_states()


@pytest.mark.parametrize("options", [{}, {"return_sequences": True, "return_state": True},
                                     {"go_backwards": True}], ids=str)
def test_stacked_cells_match_tf_keras(options):
    x = np.random.default_rng(5).standard_normal((2, 6, 3)).astype(np.float32)
    theirs = tf_keras.layers.RNN([tf_keras.layers.LSTMCell(4), tf_keras.layers.GRUCell(3),
                                  tf_keras.layers.SimpleRNNCell(2)], **options)
    expected = theirs(tensorflow.constant(x))
    ours = tf.keras.layers.RNN(tf.keras.layers.StackedRNNCells(
        [tf.keras.layers.LSTMCell(4), tf.keras.layers.GRUCell(3), tf.keras.layers.SimpleRNNCell(2)]),
        **options)
    ours.build(x.shape)
    ours.set_weights(theirs.get_weights())
    got = ours(tf.constant(x))
    for g, e in zip(tf.nest.flatten(got), tensorflow.nest.flatten(expected)):
        np.testing.assert_allclose(g.numpy(), e.numpy(), rtol=1e-5, atol=1e-6)
    assert len(ours.trainable_weights) == len(theirs.trainable_weights)
    rebuilt = tf.keras.layers.RNN.from_config(ours.get_config())
    assert [type(c).__name__ for c in rebuilt.cell.cells] == ["LSTMCell", "GRUCell", "SimpleRNNCell"]


def test_an_abstract_rnn_cell_subclass_runs_in_rnn():
    class Accumulate(tf.keras.layers.AbstractRNNCell):
        @property
        def state_size(self):
            return 3

        @property
        def output_size(self):
            return 3

        def call(self, inputs, states):
            total = states[0] + inputs
            return total * 2.0, [total]

    x = np.arange(12, dtype=np.float32).reshape(1, 4, 3)
    out, state = tf.keras.layers.RNN(Accumulate(), return_state=True)(tf.constant(x))
    np.testing.assert_allclose(state.numpy(), x.sum(axis=1))
    np.testing.assert_allclose(out.numpy(), 2 * x.sum(axis=1))
