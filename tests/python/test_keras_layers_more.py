"""The activation, reshaping, regularization, wrapper and preprocessing layers (python/ember/keras/layers/
activation.py, reshaping.py, regularization.py, wrappers.py, preprocessing.py) against tf_keras: outputs
with the same weights, output shapes, configs and from_config, training-mode behaviour of the noise layers."""
import numpy as np
import pytest
import tf_keras

import ember as em

RNG = np.random.default_rng(2)


def x(*shape):
    return RNG.standard_normal(shape).astype(np.float32)


# name -> (layer factory over a keras module, input)
CASES = {
    "ReLU": (lambda k: k.layers.ReLU(), x(2, 5)),
    "ReLU_args": (lambda k: k.layers.ReLU(max_value=0.5, negative_slope=0.1, threshold=0.2), x(2, 5)),
    "LeakyReLU": (lambda k: k.layers.LeakyReLU(0.2), x(2, 5)),
    "ELU": (lambda k: k.layers.ELU(0.7), x(2, 5)),
    "ThresholdedReLU": (lambda k: k.layers.ThresholdedReLU(0.3), x(2, 5)),
    "Softmax": (lambda k: k.layers.Softmax(axis=1), x(2, 3, 4)),
    "PReLU": (lambda k: k.layers.PReLU(alpha_initializer=k.initializers.Constant(0.25)), x(2, 3, 4)),
    "PReLU_shared": (lambda k: k.layers.PReLU(alpha_initializer=k.initializers.Constant(0.1), shared_axes=[1]),
                     x(2, 3, 4)),
    "Permute": (lambda k: k.layers.Permute((2, 1)), x(2, 3, 4)),
    "RepeatVector": (lambda k: k.layers.RepeatVector(3), x(2, 4)),
    "Cropping1D": (lambda k: k.layers.Cropping1D((1, 2)), x(2, 6, 3)),
    "Cropping2D": (lambda k: k.layers.Cropping2D(((1, 0), (2, 1))), x(2, 5, 6, 3)),
    "Cropping2D_first": (lambda k: k.layers.Cropping2D(1, data_format="channels_first"), x(2, 3, 5, 6)),
    "Cropping3D": (lambda k: k.layers.Cropping3D(1), x(1, 4, 4, 4, 2)),
    "ZeroPadding1D": (lambda k: k.layers.ZeroPadding1D((1, 2)), x(2, 3, 2)),
    "ZeroPadding2D": (lambda k: k.layers.ZeroPadding2D(((1, 0), (0, 2))), x(2, 3, 3, 2)),
    "ZeroPadding3D": (lambda k: k.layers.ZeroPadding3D(1), x(1, 2, 2, 2, 1)),
    "UpSampling1D": (lambda k: k.layers.UpSampling1D(3), x(2, 3, 2)),
    "UpSampling2D": (lambda k: k.layers.UpSampling2D((2, 3)), x(2, 3, 3, 2)),
    "UpSampling2D_bilinear": (lambda k: k.layers.UpSampling2D(2, interpolation="bilinear"), x(1, 3, 4, 2)),
    "UpSampling3D": (lambda k: k.layers.UpSampling3D(2), x(1, 2, 2, 2, 1)),
    "ActivityRegularization": (lambda k: k.layers.ActivityRegularization(l1=0.1, l2=0.2), x(2, 3)),
    "GaussianNoise": (lambda k: k.layers.GaussianNoise(0.5), x(2, 3)),
    "GaussianDropout": (lambda k: k.layers.GaussianDropout(0.3), x(2, 3)),
    "AlphaDropout": (lambda k: k.layers.AlphaDropout(0.3), x(2, 3)),
    "SpatialDropout1D": (lambda k: k.layers.SpatialDropout1D(0.3), x(2, 3, 4)),
    "SpatialDropout2D": (lambda k: k.layers.SpatialDropout2D(0.3), x(2, 3, 3, 4)),
    "TimeDistributed": (lambda k: k.layers.TimeDistributed(k.layers.Dense(3)), x(2, 4, 5)),
    "TimeDistributed_conv": (lambda k: k.layers.TimeDistributed(k.layers.Conv2D(2, 3)), x(2, 3, 5, 5, 1)),
    "Rescaling": (lambda k: k.layers.Rescaling(1 / 255.0, offset=-1.0), x(2, 3)),
    "Normalization": (lambda k: k.layers.Normalization(mean=[1.0, 2.0, 3.0], variance=[1.0, 4.0, 0.25]), x(2, 3)),
    "Resizing": (lambda k: k.layers.Resizing(4, 6), x(2, 3, 3, 2)),
    "Resizing_nearest": (lambda k: k.layers.Resizing(5, 2, interpolation="nearest"), x(2, 3, 3, 2)),
    "CenterCrop": (lambda k: k.layers.CenterCrop(2, 3), x(2, 5, 6, 2)),
    "UnitNormalization": (lambda k: k.layers.UnitNormalization(axis=1), x(2, 3, 4)),
    "Masking": (lambda k: k.layers.Masking(0.0), np.array([[[1, 2], [0, 0], [3, 0]]], np.float32)),
    "Identity": (lambda k: k.layers.Identity(), x(2, 3)),
    "SeparableConv2D": (lambda k: k.layers.SeparableConv2D(4, 3, depth_multiplier=2, padding="same",
                                                           activation="relu"), x(2, 6, 6, 3)),
    "SeparableConv2D_strided": (lambda k: k.layers.SeparableConv2D(2, (2, 3), strides=2, use_bias=False),
                                x(1, 7, 8, 2)),
    "EinsumDense": (lambda k: k.layers.EinsumDense("abc,cd->abd", output_shape=(None, 6), bias_axes="d"),
                    x(2, 3, 4)),
    "EinsumDense_ellipsis": (lambda k: k.layers.EinsumDense("...b,bc->...c", 5, bias_axes="c", activation="relu"),
                             x(2, 3, 4)),
    "EinsumDense_heads": (lambda k: k.layers.EinsumDense("abc,cde->abde", (None, 2, 3), bias_axes="de",
                                                         kernel_initializer="ones"), x(2, 7, 4)),
    "CategoryEncoding_multi_hot": (lambda k: k.layers.CategoryEncoding(5), np.array([[0, 1], [3, 3], [4, 0]])),
    "CategoryEncoding_one_hot": (lambda k: k.layers.CategoryEncoding(4, output_mode="one_hot"), np.array([3, 0, 1])),
    "CategoryEncoding_count": (lambda k: k.layers.CategoryEncoding(4, output_mode="count"),
                               np.array([[0, 1, 1], [3, 3, 3]])),
    "Hashing_strings": (lambda k: k.layers.Hashing(7), np.array([["a"], ["bc"], ["hello"]])),
    "Hashing_ints_masked": (lambda k: k.layers.Hashing(5, mask_value=0), np.array([[0, 1], [42, -3]])),
    "Discretization": (lambda k: k.layers.Discretization(bin_boundaries=[-1.0, 0.0, 0.5]),
                       np.array([[-2.0, -1.0, 0.2], [0.5, 3.0, 0.0]])),
}
MERGES = {
    "Dot_vectors": (lambda k: k.layers.Dot(axes=1), [x(3, 4), x(3, 4)]),
    "Dot_matrices": (lambda k: k.layers.Dot(axes=(2, 1)), [x(2, 3, 4), x(2, 4, 5)]),
    "Dot_normalized": (lambda k: k.layers.Dot(axes=-1, normalize=True), [x(2, 3, 4), x(2, 5, 4)]),
}


@pytest.mark.parametrize("case", sorted(MERGES))
def test_dot_matches_tf_keras(case):
    factory, inputs = MERGES[case]
    ours, theirs = factory(em.keras), factory(tf_keras)
    np.testing.assert_allclose(ours(inputs).numpy(), theirs(inputs).numpy(), rtol=1e-5, atol=1e-5)
    shapes = [i.shape for i in inputs]
    assert tuple(ours.compute_output_shape(shapes)) == tuple(theirs.compute_output_shape(shapes))
    assert ours.get_config().keys() == theirs.get_config().keys()


def test_masking_feeds_the_mask_downstream_as_tf_keras():
    value = np.array([[[1, 2], [0, 0], [3, 0]], [[0, 0], [1, 1], [0, 0]]], np.float32)
    for k in (em.keras, tf_keras):
        masked = k.layers.Masking()(value)
        assert masked._keras_mask.numpy().tolist() == [[True, False, True], [False, True, False]]


def _pair(case):
    factory, value = CASES[case]
    ours, theirs = factory(em.keras), factory(tf_keras)
    out_theirs = theirs(value)
    out_ours = ours(value)
    for w, v in zip(ours.weights, theirs.get_weights()):
        w.assign(v)
    return ours, theirs, value, out_ours, out_theirs


@pytest.mark.parametrize("case", sorted(CASES))
def test_inference_matches_tf_keras(case):
    ours, theirs, value, _, _ = _pair(case)
    assert len(ours.weights) == len(theirs.weights)
    got, want = ours(value).numpy(), theirs(value).numpy()
    assert got.shape == want.shape and got.dtype == want.dtype
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-5)
    assert tuple(ours.compute_output_shape(value.shape)) == tuple(theirs.compute_output_shape(value.shape))


@pytest.mark.parametrize("case", sorted(CASES))
def test_config_round_trips_with_tf_keras_keys(case):
    ours, theirs, value, _, _ = _pair(case)
    config = ours.get_config()
    assert set(config) == set(theirs.get_config())
    again = type(ours).from_config(config)
    again(value)
    for w, v in zip(again.weights, ours.get_weights()):
        w.assign(v)
    np.testing.assert_allclose(again(value).numpy(), ours(value).numpy(), rtol=1e-6)


def test_layers_in_a_functional_model_with_unknown_batch():
    k = em.keras
    inp = k.Input((6, 4))
    y = k.layers.TimeDistributed(k.layers.Dense(3))(inp)
    y = k.layers.LeakyReLU(0.1)(k.layers.ZeroPadding1D(1)(y))
    y = k.layers.Cropping1D((0, 2))(k.layers.UpSampling1D(2)(y))
    y = k.layers.Permute((2, 1))(k.layers.SpatialDropout1D(0.2)(y))
    model = k.Model(inp, k.layers.PReLU()(y))
    assert model.output_shape == (None, 3, 14)
    assert model(x(5, 6, 4)).shape == (5, 3, 14)
    model.compile(optimizer="sgd", loss="mse")
    model.fit(x(8, 6, 4), x(8, 3, 14), epochs=1, verbose=0)


def test_noise_layers_in_training():
    value = np.ones((4, 10, 6), np.float32)
    assert not np.allclose(em.keras.layers.GaussianNoise(0.5)(value, training=True).numpy(), value)
    dropped = em.keras.layers.SpatialDropout1D(0.5, seed=3)(value, training=True).numpy()
    per_channel = dropped.reshape(4, 10, 6)
    # a whole channel of an example is dropped or kept (scaled by 2)
    assert all(len(np.unique(per_channel[b, :, c])) == 1 for b in range(4) for c in range(6))
    assert set(np.unique(dropped)) <= {0.0, 2.0}
    normal = RNG.standard_normal((1, 20000)).astype(np.float32)
    alpha = em.keras.layers.AlphaDropout(0.2, seed=1)(normal, training=True).numpy()
    assert abs(alpha.mean()) < 0.05 and abs(alpha.std() - 1.0) < 0.05  # mean 0 and variance 1 are kept
    layer = em.keras.layers.ActivityRegularization(l1=0.5)
    layer(np.full((1, 2), -2.0, np.float32))
    assert float(layer.losses[0]) == pytest.approx(2.0)


def test_normalization_adapt_as_tf_keras():
    data = x(50, 3) * np.array([1.0, 5.0, 0.1], np.float32) + np.array([0.0, 3.0, -2.0], np.float32)
    ours, theirs = em.keras.layers.Normalization(), tf_keras.layers.Normalization()
    ours.adapt(data)
    theirs.adapt(data)
    np.testing.assert_allclose(ours(data).numpy(), theirs(data).numpy(), rtol=1e-4, atol=1e-4)
    dataset = em.data.Dataset.from_tensor_slices(data).batch(7)
    from_dataset = em.keras.layers.Normalization()
    from_dataset.adapt(dataset)
    np.testing.assert_allclose(from_dataset(data).numpy(), theirs(data).numpy(), rtol=1e-4, atol=1e-4)
    for name in ("mean", "variance"):  # tf_keras' statistics, shaped to broadcast against the input
        ours_value, theirs_value = getattr(ours, name).numpy(), getattr(theirs, name).numpy()
        assert ours_value.shape == theirs_value.shape == (1, 3)
        np.testing.assert_allclose(ours_value, theirs_value, rtol=1e-5)
    assert int(ours.count.numpy()) == int(theirs.count.numpy()) == 50


def test_center_crop_of_images_of_unknown_size_as_tf_keras():
    layer, ref = em.keras.layers.CenterCrop(3, 4), tf_keras.layers.CenterCrop(3, 4)
    staged = em.function(layer, input_signature=[em.TensorSpec([None, None, None, 2], em.float32)])
    for shape in [(2, 5, 6, 2), (1, 3, 4, 2), (2, 2, 7, 2), (1, 8, 3, 2)]:  # larger, equal, smaller
        images = x(*shape)
        np.testing.assert_allclose(staged(images).numpy(), ref(images).numpy(), rtol=1e-5, atol=1e-5)


DISCRETIZATION_ADAPT = [
    (dict(num_bins=4), (100,), {}),
    (dict(num_bins=5, epsilon=0.05), (300, 2), dict(batch_size=50)),  # summaries compressed and merged
    (dict(num_bins=3), (20, 3), {}),  # fewer values than 1 / epsilon: all kept
    (dict(num_bins=10, epsilon=0.001), (2000,), dict(batch_size=256)),
    (dict(num_bins=4), (200,), dict(batch_size=16, steps=5)),  # only the first 80 values
]


@pytest.mark.parametrize("kwargs,shape,adapt_kwargs", DISCRETIZATION_ADAPT,
                         ids=[str(i) for i in range(len(DISCRETIZATION_ADAPT))])
def test_discretization_adapt_learns_tf_keras_boundaries(kwargs, shape, adapt_kwargs):
    data = (np.random.default_rng(len(shape) + shape[0]).standard_normal(shape) * 3 + 1).astype(np.float32)
    ours, theirs = em.keras.layers.Discretization(**kwargs), tf_keras.layers.Discretization(**kwargs)
    ours.adapt(data, **adapt_kwargs)
    theirs.adapt(data, **adapt_kwargs)
    np.testing.assert_allclose(ours.bin_boundaries, theirs.bin_boundaries, rtol=1e-6)
    assert len(ours.bin_boundaries) == kwargs["num_bins"] - 1
    np.testing.assert_array_equal(ours(data).numpy(), theirs(data).numpy())
    want = {k: v for k, v in theirs.get_config().items() if k != "batch_input_shape"}  # adapt's build adds it
    assert ours.get_config() == {**want, "dtype": ours.get_config()["dtype"]}


def test_discretization_adapt_on_a_dataset_as_tf_keras():
    data = (RNG.standard_normal((150, 1)) * 2).astype(np.float32)
    ours, theirs = em.keras.layers.Discretization(num_bins=6, epsilon=0.02), \
        tf_keras.layers.Discretization(num_bins=6, epsilon=0.02)
    ours.adapt(em.data.Dataset.from_tensor_slices(data).batch(40))
    import tensorflow

    theirs.adapt(tensorflow.data.Dataset.from_tensor_slices(data).batch(40))
    np.testing.assert_allclose(ours.bin_boundaries, theirs.bin_boundaries, rtol=1e-6)
    with pytest.raises(ValueError, match="initialized with `bin_boundaries`"):
        em.keras.layers.Discretization(bin_boundaries=[0.0]).adapt(data)
    with pytest.raises(ValueError, match="num_bins"):
        em.keras.layers.Discretization().adapt(data)
    with pytest.raises(ValueError, match="should not be set"):
        em.keras.layers.Discretization(bin_boundaries=[0.0], num_bins=2)


DISCRETIZATION_INPUTS = [np.array([[-1.0, 0.5, 2.5, 0.7], [3.0, 3.0, 0.1, 1.0]]), np.array([-1.0, 0.5, 2.5]),
                         np.array([[0.5], [2.5]]), np.array(0.5)]


@pytest.mark.parametrize("mode,sparse", [("one_hot", False), ("multi_hot", False), ("count", False),
                                         ("one_hot", True), ("multi_hot", True), ("count", True)])
@pytest.mark.parametrize("which", range(len(DISCRETIZATION_INPUTS)))
def test_discretization_output_modes_as_tf_keras(mode, sparse, which):
    x = DISCRETIZATION_INPUTS[which]
    kwargs = dict(bin_boundaries=[0.0, 1.0, 2.0], output_mode=mode, sparse=sparse)
    ours, theirs = em.keras.layers.Discretization(**kwargs), tf_keras.layers.Discretization(**kwargs)
    if mode == "one_hot" and x.ndim == 2 and x.shape[-1] != 1:  # a third rank: both refuse
        for layer in (ours, theirs):
            with pytest.raises(ValueError, match="maximum supported output rank is 2"):
                layer(x)
        return
    got, want = ours(x), theirs(x)
    if sparse:
        assert isinstance(got, em.sparse.SparseTensor)
        assert got.indices.numpy().tolist() == want.indices.numpy().tolist()
        assert got.dense_shape.numpy().tolist() == want.dense_shape.numpy().tolist()
        got, want = got.values, want.values
    assert got.dtype.name == want.dtype.name == "float32"
    np.testing.assert_array_equal(got.numpy(), want.numpy())
    assert ours.get_config() == {**theirs.get_config(), "name": ours.name}
    staged = em.function(lambda v: ours(v))(em.constant(x))
    np.testing.assert_array_equal((staged.values if sparse else staged).numpy(), got.numpy())


def test_discretization_modes_adapted_in_a_model_and_bad_modes_as_tf_keras():
    data = np.arange(100.0, dtype=np.float32)
    for k in (em.keras, tf_keras):
        with pytest.raises(ValueError, match="output_mode"):
            k.layers.Discretization(bin_boundaries=[0.0], output_mode="tf_idf")
        with pytest.raises(ValueError, match="`sparse` may only be true"):
            k.layers.Discretization(bin_boundaries=[0.0], sparse=True)
    outputs = []
    for k in (em.keras, tf_keras):
        layer = k.layers.Discretization(num_bins=4, output_mode="count", dtype="float64")
        layer.adapt(data)
        inputs = k.Input((3,))
        model = k.Model(inputs, k.layers.Dense(1, kernel_initializer="ones")(k.layers.Lambda(
            lambda t: t * 1.0)(layer(inputs))))
        outputs.append((layer(np.array([[5.0, 60.0, 99.0]])).numpy(), model(np.array([[5.0, 60.0, 99.0]])).numpy()))
        assert layer(np.zeros((1, 3))).dtype.name == "float64"
    np.testing.assert_array_equal(outputs[0][0], outputs[1][0])
    np.testing.assert_allclose(outputs[0][1], outputs[1][1])


def test_bad_arguments_raise_as_tf_keras():
    for k in (em.keras, tf_keras):
        with pytest.raises(ValueError):
            k.layers.ReLU(max_value=-1.0)
        with pytest.raises(ValueError):
            k.layers.Permute((1, 3))
        with pytest.raises(ValueError):
            k.layers.ZeroPadding2D(((1, 2, 3),))
        with pytest.raises(ValueError):
            k.layers.TimeDistributed("dense")
        with pytest.raises(ValueError):
            k.layers.Normalization(mean=[1.0])


ATTENTION = {
    "dot": lambda k: k.layers.Attention(),
    "dot_scaled": lambda k: k.layers.Attention(use_scale=True),
    "concat": lambda k: k.layers.Attention(use_scale=True, score_mode="concat"),
    "additive": lambda k: k.layers.AdditiveAttention(),
    "additive_unscaled": lambda k: k.layers.AdditiveAttention(use_scale=False),
}


@pytest.mark.parametrize("case", sorted(ATTENTION))
@pytest.mark.parametrize("with_key", [False, True])
def test_attention_matches_tf_keras(case, with_key):
    q, v, key = x(2, 3, 4), x(2, 5, 4), x(2, 5, 4)
    inputs = [q, v, key] if with_key else [q, v]
    q_mask = np.array([[True, True, False], [True, False, True]])
    v_mask = np.array([[True, True, True, False, False], [True, False, True, True, True]])
    ours, theirs = ATTENTION[case](em.keras), ATTENTION[case](tf_keras)
    theirs(inputs)
    ours(inputs)
    for w, value in zip(ours.weights, theirs.get_weights()):
        w.assign(value)
    for kwargs in [{}, {"mask": [q_mask, v_mask]}, {"use_causal_mask": True}, {"return_attention_scores": True}]:
        got, want = ours(inputs, **kwargs), theirs(inputs, **kwargs)
        for g, w in zip(got if isinstance(got, tuple) else [got], want if isinstance(want, tuple) else [want]):
            np.testing.assert_allclose(g.numpy(), w.numpy(), rtol=1e-5, atol=1e-5)
    assert set(ours.get_config()) == set(theirs.get_config())



@pytest.mark.parametrize("name", ["Cropping1D", "Cropping2D", "Cropping3D"])
def test_cropping_default_argument_is_tf_keras(name):
    ours, theirs = getattr(em.keras.layers, name)(), getattr(tf_keras.layers, name)()
    assert ours.get_config()["cropping"] == theirs.get_config()["cropping"]
    shape = (2,) + (4,) * ours.rank + (2,)
    x = np.arange(np.prod(shape), dtype=np.float32).reshape(shape)
    np.testing.assert_array_equal(ours(x).numpy(), theirs(x).numpy())
