"""ember.keras.backend (python/ember/keras/backend.py) against tf_keras.backend: each function on the same
inputs, values compared; shapes of the products and convolutions in both data formats; the variable makers;
switch / in_train_phase; rnn with a mask; K.function on a functional model."""
import numpy as np
import pytest
import tensorflow
import tf_keras

import ember

RNG = np.random.default_rng(7)
A = RNG.standard_normal((2, 3, 4)).astype(np.float32)
B = RNG.standard_normal((2, 4, 5)).astype(np.float32)
M = RNG.standard_normal((3, 4)).astype(np.float32)
P = np.abs(RNG.standard_normal((4, 3))).astype(np.float32) + 0.1
T = np.eye(3, dtype=np.float32)[[0, 2, 1, 1]]
IMG = RNG.standard_normal((2, 6, 7, 3)).astype(np.float32)
IMG_CF = np.transpose(IMG, (0, 3, 1, 2)).copy()
K3 = RNG.standard_normal((3, 3, 3, 4)).astype(np.float32)
SEQ = RNG.standard_normal((2, 9, 3)).astype(np.float32)
K1 = RNG.standard_normal((3, 3, 5)).astype(np.float32)
VOL = RNG.standard_normal((1, 4, 5, 6, 2)).astype(np.float32)
K5 = RNG.standard_normal((2, 2, 2, 2, 3)).astype(np.float32)
DW = RNG.standard_normal((3, 3, 3, 2)).astype(np.float32)
PW = RNG.standard_normal((1, 1, 6, 4)).astype(np.float32)

CASES = {
    "abs": lambda K, c: K.abs(c(A)), "exp": lambda K, c: K.exp(c(M)), "log": lambda K, c: K.log(c(P)),
    "sqrt of negatives": lambda K, c: K.sqrt(c(M)), "square": lambda K, c: K.square(c(M)),
    "pow": lambda K, c: K.pow(c(P), 1.5), "sign": lambda K, c: K.sign(c(M)), "round": lambda K, c: K.round(c(M) * 3),
    "sin cos": lambda K, c: K.sin(c(M)) + K.cos(c(M)), "softplus": lambda K, c: K.softplus(c(M)),
    "softsign": lambda K, c: K.softsign(c(M)), "hard_sigmoid": lambda K, c: K.hard_sigmoid(c(M) * 4),
    "softmax": lambda K, c: K.softmax(c(A), axis=1), "elu": lambda K, c: K.elu(c(M), 0.5),
    "relu plain": lambda K, c: K.relu(c(M)), "relu leaky": lambda K, c: K.relu(c(M), alpha=0.1),
    "relu max 6": lambda K, c: K.relu(c(M) * 10, max_value=6),
    "relu all options": lambda K, c: K.relu(c(M) * 4, alpha=0.1, max_value=3.0, threshold=0.5),
    "relu threshold": lambda K, c: K.relu(c(M), threshold=0.2),
    "clip": lambda K, c: K.clip(c(M), -0.5, 0.5), "clip inverted": lambda K, c: K.clip(c(M), 0.5, -0.5),
    "clip open": lambda K, c: K.clip(c(M), None, 0.1),
    "mean": lambda K, c: K.mean(c(A), axis=1), "mean bool": lambda K, c: K.mean(c(M) > 0),
    "sum keepdims": lambda K, c: K.sum(c(A), axis=[0, 2], keepdims=True), "prod": lambda K, c: K.prod(c(M), 0),
    "max min": lambda K, c: K.max(c(A), -1) - K.min(c(A), 1, keepdims=False)[:, :1],
    "var std": lambda K, c: K.var(c(A), axis=1) + K.std(c(A)),
    "all any": lambda K, c: K.cast(K.all(c(M) > -1, axis=1), "float32") + K.cast(K.any(c(M)), "float32"),
    "argmax argmin": lambda K, c: K.argmax(c(A)) + K.argmin(c(A), axis=1)[:, :1],
    "cumsum cumprod": lambda K, c: K.cumsum(c(M), 1) + K.cumprod(c(M)),
    "l2_normalize": lambda K, c: K.l2_normalize(c(M), axis=1),
    "in_top_k": lambda K, c: K.in_top_k(c(P), K.constant([0, 2, 1, 1], "int32"), 2),
    "comparisons": lambda K, c: K.cast(K.equal(c(M), c(M)), "float32") + K.cast(K.greater(c(M), 0), "float32")
                                + K.cast(K.less_equal(c(M), 0.1), "float32"),
    "max/min elementwise": lambda K, c: K.maximum(c(M), 0.2) + K.minimum(c(M), -0.2),
    "arange": lambda K, c: K.arange(2, 11, 3), "arange negative": lambda K, c: K.arange(-3),
    "arange float": lambda K, c: K.arange(5, dtype="float32"),
    "constant": lambda K, c: K.constant(2, shape=[2, 2]), "cast_to_floatx": lambda K, c: K.cast_to_floatx([1, 2]),
    "dot 2d": lambda K, c: K.dot(c(M), c(P)), "dot nd": lambda K, c: K.dot(c(A), c(B)),
    "batch_dot default": lambda K, c: K.batch_dot(c(A), c(B)),
    "batch_dot axes": lambda K, c: K.batch_dot(c(A), c(np.transpose(B, (0, 2, 1))), axes=(2, 2)),
    "batch_dot 2d": lambda K, c: K.batch_dot(c(M[:2]), c(M[1:]), axes=1),
    "batch_dot mixed": lambda K, c: K.batch_dot(c(A), c(M[:2]), axes=(2, 1)),
    "flatten": lambda K, c: K.flatten(c(A)), "batch_flatten": lambda K, c: K.batch_flatten(c(A)),
    "expand squeeze": lambda K, c: K.squeeze(K.expand_dims(c(M), 1), 1),
    "permute": lambda K, c: K.permute_dimensions(c(A), (2, 0, 1)), "transpose": lambda K, c: K.transpose(c(M)),
    "concatenate": lambda K, c: K.concatenate([c(M), c(M)], axis=-1), "stack": lambda K, c: K.stack([c(M), c(M)], 1),
    "gather": lambda K, c: K.gather(c(M), [2, 0]), "one_hot": lambda K, c: K.one_hot(K.constant([0, 2], "int32"), 4),
    "reverse": lambda K, c: K.reverse(c(A), [0, 2]), "tile": lambda K, c: K.tile(c(M), (2, 1)),
    "repeat": lambda K, c: K.repeat(c(M), 3), "repeat_elements": lambda K, c: K.repeat_elements(c(A), 2, axis=1),
    "temporal_padding": lambda K, c: K.temporal_padding(c(A), (1, 2)),
    "spatial_2d_padding": lambda K, c: K.spatial_2d_padding(c(IMG), ((1, 0), (0, 2))),
    "spatial_2d_padding cf": lambda K, c: K.spatial_2d_padding(c(IMG_CF), ((1, 0), (0, 2)), "channels_first"),
    "spatial_3d_padding": lambda K, c: K.spatial_3d_padding(c(VOL)),
    "resize_images": lambda K, c: K.resize_images(c(IMG), 2, 3, "channels_last"),
    "resize_images cf": lambda K, c: K.resize_images(c(IMG_CF), 2, 1, "channels_first"),
    "resize_volumes": lambda K, c: K.resize_volumes(c(VOL), 2, 1, 2, "channels_last"),
    "bias_add": lambda K, c: K.bias_add(c(IMG), c(np.arange(3, dtype=np.float32))),
    "bias_add full bias cf": lambda K, c: K.bias_add(c(IMG_CF[:, :, :2, :2]), c(np.arange(12, dtype=np.float32)
                                                                            .reshape(2, 2, 3)), "channels_first"),
    "bias_add full bias": lambda K, c: K.bias_add(c(IMG[:, :2, :2]), c(np.arange(12, dtype=np.float32)
                                                                     .reshape(2, 2, 3))),
    "bias_add cf": lambda K, c: K.bias_add(c(IMG_CF), c(np.arange(3, dtype=np.float32)), "channels_first"),
    "conv1d": lambda K, c: K.conv1d(c(SEQ), c(K1), padding="same"),
    "conv1d causal dilated": lambda K, c: K.conv1d(c(SEQ), c(K1), padding="causal", dilation_rate=2),
    "conv2d": lambda K, c: K.conv2d(c(IMG), c(K3), strides=(2, 1), padding="same"),
    "conv2d cf": lambda K, c: K.conv2d(c(IMG_CF), c(K3), data_format="channels_first"),
    "conv2d dilated": lambda K, c: K.conv2d(c(IMG), c(K3), dilation_rate=(2, 2)),
    "conv3d": lambda K, c: K.conv3d(c(VOL), c(K5)),
    "conv2d_transpose": lambda K, c: K.conv2d_transpose(c(IMG[..., :1] * 0 + IMG[..., :1]), c(K3[..., :1, :1]),
                                                        (2, 12, 14, 1), strides=(2, 2), padding="same"),
    "depthwise": lambda K, c: K.depthwise_conv2d(c(IMG), c(DW), padding="same"),
    "separable": lambda K, c: K.separable_conv2d(c(IMG), c(DW), c(PW)),
    "pool2d max": lambda K, c: K.pool2d(c(IMG), (2, 2), strides=(2, 2)),
    "pool2d avg cf": lambda K, c: K.pool2d(c(IMG_CF), (2, 3), padding="same", data_format="channels_first",
                                           pool_mode="avg"),
    "pool3d": lambda K, c: K.pool3d(c(VOL), (2, 2, 2), (2, 2, 2), pool_mode="avg"),
    "batch_normalization": lambda K, c: K.batch_normalization(c(M), c(M[0]), c(P[0, :1] + M[0] ** 2), c(M[1]),
                                                              c(M[2])),
    "normalize_batch_in_training": lambda K, c: K.normalize_batch_in_training(c(A), c(M[0]), c(M[1]), [0, 1])[0],
    "normalize_batch axis 1": lambda K, c: K.normalize_batch_in_training(c(A), c(M[:, 0]), c(M[:, 1]), [0, 2])[0],
    "binary_crossentropy": lambda K, c: K.binary_crossentropy(c(T), c(P / (P + 1))),
    "binary_crossentropy logits": lambda K, c: K.binary_crossentropy(c(T), c(M[:, :3].T[:, :3][:4] if False else
                                                                             P - 1), from_logits=True),
    "categorical_crossentropy": lambda K, c: K.categorical_crossentropy(c(T), c(P)),
    "categorical_crossentropy logits": lambda K, c: K.categorical_crossentropy(c(T), c(P), from_logits=True),
    "sparse_categorical_crossentropy": lambda K, c: K.sparse_categorical_crossentropy(
        K.constant([0, 2, 1, 1], "int32"), c(P), from_logits=True),
    "binary_focal": lambda K, c: K.binary_focal_crossentropy(c(T), c(P / (P + 1)), apply_class_balancing=True),
    "categorical_focal": lambda K, c: K.categorical_focal_crossentropy(c(T), c(P)),
    "switch scalar": lambda K, c: K.switch(K.constant(True, "bool"), lambda: c(M), lambda: -c(M)),
    "switch tensor": lambda K, c: K.switch(c(M) > 0, c(M), -c(M)),
    "switch lower rank": lambda K, c: K.switch(c(A[:, :, 0]) > 0, c(A), -c(A)),
    "in_train_phase": lambda K, c: K.in_train_phase(c(M), -c(M), training=1),
    "in_test_phase": lambda K, c: K.in_test_phase(c(M), -c(M), training=1),
    "local_conv1d": lambda K, c: K.local_conv1d(c(SEQ), c(RNG_LOCAL1), (3,), (2,)),
    "local_conv2d": lambda K, c: K.local_conv2d(c(IMG), c(RNG_LOCAL2), (3, 3), (1, 2), (4, 3)),
    "local_conv2d cf": lambda K, c: K.local_conv2d(c(IMG_CF), c(RNG_LOCAL2), (3, 3), (1, 2), (4, 3),
                                                   "channels_first"),
    "count_params": lambda K, c: K.count_params(K.variable(M)),
    "int_shape ndim dtype": lambda K, c: (K.int_shape(c(A)), K.ndim(c(A)), K.dtype(c(A))),
    "numpy inputs": lambda K, c: (K.int_shape(A), K.batch_dot(A, B), K.bias_add(IMG, np.arange(3, dtype=np.float32))),
    "eye": lambda K, c: K.get_value(K.eye(3)), "zeros ones": lambda K, c: K.get_value(K.zeros((2, 2)))
                                                                                + K.get_value(K.ones((2, 2))),
}
RNG_LOCAL1 = RNG.standard_normal((4, 9, 2)).astype(np.float32)
RNG_LOCAL2 = RNG.standard_normal((12, 27, 2)).astype(np.float32)


def _run(backend, tf, case):
    value = case(backend, lambda array: tf.constant(array))
    return tf.nest.map_structure(lambda v: np.asarray(v.numpy() if hasattr(v, "numpy") else v), value)


@pytest.mark.parametrize("name", sorted(CASES))
def test_matches_tf_keras(name):
    ours = _run(ember.keras.backend, ember, CASES[name])
    theirs = _run(tf_keras.backend, tensorflow, CASES[name])
    for got, want in zip(ember.nest.flatten(ours), tensorflow.nest.flatten(theirs)):
        got, want = np.asarray(got), np.asarray(want)
        assert got.shape == want.shape, name
        if got.dtype.kind in "fc":
            np.testing.assert_allclose(got, want, rtol=2e-5, atol=2e-5, err_msg=name)
        else:
            np.testing.assert_array_equal(got, want, err_msg=name)


def test_variables_and_updates():
    K = ember.keras.backend
    v = K.variable([[1.0, 2.0]], name="v")
    assert isinstance(v, ember.Variable) and v.dtype == ember.float32
    K.update_add(v, [[1.0, 1.0]])
    K.update_sub(v, [[0.5, 0.5]])
    K.moving_average_update(v, ember.constant([[0.0, 0.0]]), 0.75)
    np.testing.assert_allclose(K.get_value(v), [[1.125, 1.875]])
    K.update(v, [[7.0, 8.0]])
    assert K.eval(v).tolist() == [[7.0, 8.0]]
    assert isinstance(K.zeros((2, 3)), ember.Variable)
    assert K.random_uniform_variable((3,), 0, 1, seed=1).shape == (3,)
    sample = K.get_value(K.random_bernoulli((2000,), p=0.3, seed=3))
    assert set(np.unique(sample)) <= {0.0, 1.0} and 0.25 < sample.mean() < 0.35
    with K.learning_phase_scope(1):
        assert K.learning_phase() == 1
        np.testing.assert_array_equal(K.in_train_phase(ember.constant(1.0), ember.constant(2.0)).numpy(), 1.0)


def test_rnn_with_mask_matches_tf_keras():
    x = RNG.standard_normal((2, 5, 3)).astype(np.float32)
    w = RNG.standard_normal((3, 4)).astype(np.float32)
    u = RNG.standard_normal((4, 4)).astype(np.float32) * 0.5
    mask = np.array([[1, 1, 0, 1, 0], [1, 0, 1, 1, 1]], bool)

    def run(K, tf, **options):
        def step(inputs, states):
            h = K.tanh(K.dot(inputs, tf.constant(w)) + K.dot(states[0], tf.constant(u)))
            return h, [h]

        last, outputs, states = K.rnn(step, tf.constant(x), [tf.zeros((2, 4))], mask=tf.constant(mask), **options)
        return last.numpy(), outputs.numpy(), states[0].numpy()

    for options in ({}, {"go_backwards": True}, {"zero_output_for_mask": True}, {"return_all_outputs": False}):
        for got, want in zip(run(ember.keras.backend, ember, **options),
                             run(tf_keras.backend, tensorflow, **options)):
            np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-6, err_msg=str(options))


def test_rnn_with_an_unknown_number_of_steps_matches_the_unrolled_run():
    x = RNG.standard_normal((2, 5, 3)).astype(np.float32)
    w = RNG.standard_normal((3, 4)).astype(np.float32)
    mask = np.array([[1, 1, 0, 1, 0], [1, 0, 1, 1, 1]], bool)
    K = ember.keras.backend

    def step(inputs, states):
        h = K.tanh(K.dot(inputs, ember.constant(w)) + states[0])
        return h, [h]

    for options in ({}, {"go_backwards": True, "zero_output_for_mask": True}, {"return_all_outputs": False}):
        unrolled = K.rnn(step, ember.constant(x), [ember.zeros((2, 4))], mask=ember.constant(mask), **options)

        @ember.function(input_signature=[ember.TensorSpec([2, None, 3]), ember.TensorSpec([2, None], ember.bool)])
        def looped(inputs, steps_mask):
            return K.rnn(step, inputs, [ember.zeros((2, 4))], mask=steps_mask, **options)

        for got, want in zip(ember.nest.flatten(looped(ember.constant(x), ember.constant(mask))),
                             ember.nest.flatten(unrolled)):
            np.testing.assert_allclose(got.numpy(), want.numpy(), rtol=1e-6, atol=1e-6, err_msg=str(options))


def test_function_reads_an_intermediate_layer():
    K, keras = ember.keras.backend, ember.keras
    inputs = keras.Input((4,))
    hidden = keras.layers.Dense(3, activation="relu", name="hidden")(inputs)
    model = keras.Model(inputs, keras.layers.Dense(1)(hidden))
    read_hidden = K.function([model.input], [model.get_layer("hidden").output])
    x = RNG.standard_normal((5, 4)).astype(np.float32)
    (values,) = read_hidden([x])
    assert values.shape == (5, 3)
    expected = np.maximum(x @ model.get_layer("hidden").kernel.numpy() + model.get_layer("hidden").bias.numpy(), 0)
    np.testing.assert_allclose(values, expected, rtol=1e-5, atol=1e-6)
    placeholder = K.placeholder(shape=(None, 7))
    assert K.is_keras_tensor(placeholder) and K.int_shape(placeholder) == (None, 7)
