"""Gradients of sparse reads are IndexedSlices, as TensorFlow's: tf.gather / tf.nn.embedding_lookup /
Variable.sparse_read of a variable and the Keras Embedding layer, eagerly and under a tape inside a
function; the clipping functions, the Keras optimizers and the loss-scale optimizer take them as TensorFlow's
do. Each case runs in ember and in TensorFlow and compares the kind of gradient, its dense value, its
dense_shape and its (index, row) pairs (the order of rows from several reads is backprop's and differs)."""

import numpy as np
import pytest
import tensorflow as real_tf
import tf_keras

import ember as tf


def _table():
    return np.arange(12, dtype=np.float32).reshape(6, 2) / 4.0


def _summary(g):
    """(kind, dense value, dense_shape, sorted (index, row) pairs) of a gradient."""
    if g is None:
        return None
    if type(g).__name__ == "IndexedSlices":
        values, indices = np.asarray(g.values), np.asarray(g.indices).reshape(-1)
        rows = sorted((int(i), tuple(np.round(r, 5).ravel())) for i, r in zip(indices, values))
        dense = np.zeros(tuple(np.asarray(g.dense_shape)), values.dtype)
        np.add.at(dense, indices, values)
        return "slices", dense, tuple(np.asarray(g.dense_shape)), rows
    return "dense", np.asarray(g), None, None


def _assert_same(ours, theirs):
    ours, theirs = _summary(ours), _summary(theirs)
    assert (ours is None) == (theirs is None)
    if ours is None:
        return
    assert ours[0] == theirs[0]
    np.testing.assert_allclose(ours[1], theirs[1], rtol=1e-5, atol=1e-6)
    assert ours[2] == theirs[2]
    assert ours[3] == theirs[3]


def _reads(lib):
    """name -> fn(v) giving a scalar, each reading v some way."""
    ids = [[1, 3], [1, 0]]
    return {
        "gather": lambda v: lib.reduce_sum(lib.gather(v, ids) ** 2),
        "gather_axis0": lambda v: lib.reduce_sum(lib.gather(v, [5, 5, 2], axis=0) * 3.0),
        "embedding_lookup": lambda v: lib.reduce_sum(lib.sin(lib.nn.embedding_lookup(v, ids))),
        "embedding_lookup_list": lambda v: lib.reduce_sum(lib.nn.embedding_lookup([v], [4, 2])),
        "embedding_lookup_max_norm": lambda v: lib.reduce_sum(lib.nn.embedding_lookup(v, [4, 2], max_norm=1.0)),
        "sparse_read": lambda v: lib.reduce_sum(v.sparse_read([2, 2, 0]) * v.sparse_read([1])),
        "two_reads": lambda v: lib.reduce_sum(lib.gather(v, [1, 2])) * 2.0 + lib.reduce_sum(lib.gather(v, [4])),
        "dense_and_sparse": lambda v: lib.reduce_sum(lib.gather(v, ids)) + lib.reduce_sum(v * v),
        "gather_axis1": lambda v: lib.reduce_sum(lib.gather(v, [1], axis=1) ** 2),
    }


@pytest.mark.parametrize("case", sorted(_reads(tf)))
def test_eager_gradient_of_a_read_matches_tensorflow(case):
    results = []
    for lib in (tf, real_tf):
        v = lib.Variable(_table())
        with lib.GradientTape() as tape:
            y = _reads(lib)[case](v)
        results.append(tape.gradient(y, v))
    _assert_same(*results)


@pytest.mark.parametrize("case", ["gather", "embedding_lookup", "sparse_read", "two_reads", "dense_and_sparse",
                                  "gather_axis1"])
def test_gradient_under_a_tape_inside_a_function_matches_tensorflow(case):
    results = []
    for lib in (tf, real_tf):
        v = lib.Variable(_table())

        @lib.function
        def step():
            with lib.GradientTape() as tape:
                y = _reads(lib)[case](v)
            g = tape.gradient(y, v)
            if type(g).__name__ == "IndexedSlices":
                return "slices", (g.values, g.indices, g.dense_shape)
            return "dense", g

        kind, out = step()
        results.append(type("IndexedSlices", (), {"values": out[0], "indices": out[1], "dense_shape": out[2]})()
                       if kind == "slices" else out)
    _assert_same(*results)


def test_function_traced_once_gives_slices_for_new_ids():
    v = tf.Variable(_table())
    traces = []

    @tf.function
    def step(ids):
        traces.append(1)
        with tf.GradientTape() as tape:
            y = tf.reduce_sum(tf.gather(v, ids) ** 2)
        g = tape.gradient(y, v)
        return g.values, g.indices

    for ids in ([1, 2], [0, 5]):
        values, indices = step(tf.constant(ids))
        np.testing.assert_array_equal(indices.numpy(), ids)
        np.testing.assert_allclose(values.numpy(), 2 * _table()[ids])
    assert len(traces) == 1


def test_higher_order_persistent_and_output_gradients_match_tensorflow():
    results = {}
    for lib in (tf, real_tf):
        v = lib.Variable(_table())
        with lib.GradientTape() as outer:
            with lib.GradientTape() as inner:
                y = lib.reduce_sum(lib.gather(v, [0, 2, 2]) ** 3)
            first = inner.gradient(y, v)
            z = lib.reduce_sum(first.values)
        second = outer.gradient(z, v)
        with lib.GradientTape(persistent=True) as tape:
            w = lib.reduce_sum(lib.gather(v, [3]) * 5.0)
            rows = lib.gather(v, [3, 1])
        again = [tape.gradient(w, v), tape.gradient(w, v),
                 tape.gradient(rows, v, output_gradients=lib.ones([2, 2]) * 7.0)]
        with lib.GradientTape(watch_accessed_variables=False) as unwatched:
            u = lib.reduce_sum(lib.gather(v, [3, 1]))
        results[lib] = [first, second, *again, unwatched.gradient(u, v)]
    for ours, theirs in zip(results[tf], results[real_tf]):
        _assert_same(ours, theirs)


def test_jacobian_of_a_gather_is_dense_as_tensorflow():
    results = []
    for lib in (tf, real_tf):
        v = lib.Variable(_table())
        with lib.GradientTape() as tape:
            y = lib.gather(v, [0, 2])
        results.append(tape.jacobian(y, v))
    _assert_same(*results)


def _loss_through_a_function(lib, v):
    @lib.function
    def loss(ids):
        return lib.reduce_sum(lib.gather(v, ids) ** 2)

    return loss(lib.constant([[1, 3], [1, 0]]))


@pytest.mark.parametrize("case", ["function_call", "gather_of_read_value", "gather_of_watched_tensor"])
def test_gathers_ember_differentiates_densely_give_tensorflows_values(case):
    # TensorFlow gives an IndexedSlices in these cases too (its GatherV2 gradient is one, and a function's
    # backward returns it); ember's are dense, with the same values (docs/autodiff.md, Sparse reads).
    results = []
    for lib in (tf, real_tf):
        v = lib.Variable(_table())
        x = lib.constant(_table())
        with lib.GradientTape() as tape:
            tape.watch(x)
            if case == "function_call":
                y = _loss_through_a_function(lib, v)
            elif case == "gather_of_read_value":
                y = lib.reduce_sum(lib.gather(v.read_value(), [1, 1]))
            else:
                y = lib.reduce_sum(lib.gather(x, [4, 1, 4]) ** 2)
        g = tape.gradient(y, x if case == "gather_of_watched_tensor" else v)
        results.append(lib.convert_to_tensor(g).numpy())
    np.testing.assert_allclose(results[0], results[1], rtol=1e-6)


def test_clipping_keeps_slices_and_measures_their_values_as_tensorflow():
    results = []
    for lib in (tf, real_tf):
        v = lib.Variable(_table())
        with lib.GradientTape() as tape:
            y = lib.reduce_sum(lib.gather(v, [3, 1, 3]) * 2.0)
        g = tape.gradient(y, v)
        clipped, norm = lib.clip_by_global_norm([g, lib.ones([2])], 1.5)
        results.append([lib.clip_by_norm(g, 1.0), lib.clip_by_value(g, -0.5, 0.5), clipped[0], clipped[1], norm,
                        lib.linalg.global_norm([g])])
    for ours, theirs in zip(*results):
        _assert_same(ours, theirs)


def _embedding_model(keras):
    return keras.Sequential([
        keras.layers.Embedding(40, 8, embeddings_initializer=keras.initializers.Constant(0.05)),
        keras.layers.GlobalAveragePooling1D(),
        keras.layers.Dense(1, kernel_initializer="ones"),
    ])


@pytest.mark.parametrize("optimizer", ["sgd", "adam", "rmsprop", "adagrad"])
def test_keras_fit_of_an_embedding_matches_tf_keras(optimizer):
    rng = np.random.default_rng(0)
    x, y = rng.integers(0, 40, size=(64, 7)), rng.integers(0, 2, size=(64,)).astype(np.float32)
    results = []
    for keras in (tf.keras, tf_keras):
        model = _embedding_model(keras)
        model.compile(optimizer=optimizer, loss=keras.losses.BinaryCrossentropy(from_logits=True))
        history = model.fit(x, y, batch_size=16, epochs=2, verbose=0, shuffle=False)
        results.append((history.history["loss"], model.layers[0].embeddings.numpy()))
    np.testing.assert_allclose(results[0][0], results[1][0], rtol=1e-5)
    np.testing.assert_allclose(results[0][1], results[1][1], rtol=1e-5, atol=1e-6)


def test_keras_gradient_of_an_embedding_and_clipped_apply_match_tf_keras():
    x = np.array([[1, 2, 2], [3, 0, 1]])
    results = []
    for lib, keras in ((tf, tf.keras), (real_tf, tf_keras)):
        model = _embedding_model(keras)
        model.build((None, 3))
        with lib.GradientTape() as tape:
            loss = lib.reduce_sum(model(x))
        grads = tape.gradient(loss, model.trainable_variables)
        keras.optimizers.Adam(clipnorm=0.01).apply_gradients(zip(grads, model.trainable_variables))
        results.append((grads[0], model.layers[0].embeddings.numpy()))
    _assert_same(results[0][0], results[1][0])
    np.testing.assert_allclose(results[0][1], results[1][1], rtol=1e-6)


def test_loss_scale_optimizer_unscales_slices_as_tf_keras():
    results = []
    for lib, keras in ((tf, tf.keras), (real_tf, tf_keras)):
        optimizer = keras.mixed_precision.LossScaleOptimizer(keras.optimizers.SGD(0.1), dynamic=False,
                                                             initial_scale=8.0)
        v = lib.Variable(_table())
        with lib.GradientTape() as tape:
            loss = optimizer.get_scaled_loss(lib.reduce_sum(lib.gather(v, [4, 4, 1])))
        (g,) = optimizer.get_unscaled_gradients(tape.gradient(loss, [v]))
        optimizer.apply_gradients([(g, v)])
        results.append((g, v.numpy()))
    _assert_same(results[0][0], results[1][0])
    np.testing.assert_allclose(results[0][1], results[1][1], rtol=1e-6)


def test_an_indexed_slices_gradient_of_the_wrong_shape_is_refused():
    v = tf.Variable(_table())
    bad = tf.IndexedSlices(tf.ones([2, 3]), tf.constant([0, 1]), tf.constant([6, 3]))
    with pytest.raises(tf.errors.InvalidArgumentError, match="shape"):
        tf.keras.optimizers.SGD().apply_gradients([(bad, v)])
