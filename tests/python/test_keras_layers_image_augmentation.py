"""The random image augmentation layers (keras/layers/image_augmentation.py) against tf_keras': seeded layers
give tf_keras' images call after call (Note [Augmentation draws]), batched and not, float and integer
images, eagerly, traced, in a Sequential model and in a tf.data map; identity at inference; fixed factors
without a seed; the spread of unseeded draws; configs both ways; the constructors' errors. Also Resizing's
crop_to_aspect_ratio (smart_resize)."""
import numpy as np
import pytest
import tensorflow as real_tf
import tf_keras

import ember as tf


def _images(shape=(3, 8, 10, 3), seed=0, dtype=np.float32):
    return np.random.default_rng(seed).uniform(0, 255, shape).astype(dtype)


# (class name, args, kwargs): every layer, and the fill modes, interpolations and factor forms.
CASES = [
    ("RandomFlip", (), {}),
    ("RandomFlip", ("horizontal",), {}),
    ("RandomFlip", ("vertical",), {}),
    ("RandomRotation", (0.2,), {}),
    ("RandomRotation", ((-0.3, 0.1),), dict(fill_mode="constant", fill_value=7.0, interpolation="nearest")),
    ("RandomRotation", (0.5,), dict(fill_mode="wrap")),
    ("RandomZoom", (0.3,), {}),
    ("RandomZoom", ((-0.4, 0.2), (0.1, 0.5)), dict(fill_mode="wrap")),
    ("RandomZoom", (-0.5,), dict(fill_mode="constant", interpolation="nearest")),
    ("RandomTranslation", (0.2, 0.3), dict(fill_mode="nearest")),
    ("RandomTranslation", ((-0.5, 0.1), 0.4), dict(fill_mode="constant", fill_value=-3.0)),
    ("RandomContrast", (0.5,), {}),
    ("RandomContrast", ((0.1, 0.9),), {}),
    ("RandomBrightness", (0.3,), {}),
    ("RandomBrightness", ((-0.2, 0.5),), dict(value_range=(0, 1))),
    ("RandomCrop", (5, 6), {}),
    ("RandomHeight", (0.4,), {}),
    ("RandomWidth", ((-0.3, 0.2),), dict(interpolation="nearest")),
]
IDS = [f"{name}-{i}" for i, (name, _, _) in enumerate(CASES)]


def _pair(name, args, kwargs, seed):
    return (getattr(tf.keras.layers, name)(*args, seed=seed, **kwargs),
            getattr(tf_keras.layers, name)(*args, seed=seed, **kwargs))


def _close(got, want):
    got, want = np.asarray(got), np.asarray(want)
    assert got.shape == want.shape and got.dtype == want.dtype
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-3)


@pytest.mark.parametrize("case", CASES, ids=IDS)
def test_seeded_layers_give_tf_keras_images_call_after_call(case):
    name, args, kwargs = case
    ours, theirs = _pair(name, args, kwargs, seed=11)
    x = _images()
    for inputs in (x, x, x[0], x.astype(np.uint8)):
        _close(ours(inputs), theirs(inputs))


@pytest.mark.parametrize("case", CASES, ids=IDS)
def test_identity_at_inference(case):
    name, args, kwargs = case
    ours, theirs = _pair(name, args, kwargs, seed=3)
    x = _images()
    if name == "RandomCrop":  # at inference RandomCrop resizes (smart_resize), as tf_keras
        _close(ours(x, training=False), theirs(x, training=False))
        return
    np.testing.assert_array_equal(ours(x, training=False).numpy(), x)
    integers = x.astype(np.int32)
    _close(ours(integers, training=False), theirs(integers, training=False))


@pytest.mark.parametrize("case", CASES, ids=IDS)
def test_traced_with_unknown_sizes(case):
    name, args, kwargs = case
    ours, theirs = _pair(name, args, kwargs, seed=5)
    step = tf.function(lambda images: ours(images, training=True),
                       input_signature=[tf.TensorSpec([None, None, None, 3], tf.float32)])
    for shape in ((3, 8, 10, 3), (2, 9, 7, 3)):
        x = _images(shape)
        _close(step(x), theirs(x, training=True))


def test_in_a_sequential_model():
    def build(keras):
        keras.backend.clear_session()
        layers = keras.layers
        return keras.Sequential([keras.Input((8, 10, 3)), layers.RandomFlip(seed=1), layers.RandomRotation(0.1, seed=2),
                                 layers.RandomZoom(0.2, seed=3), layers.Rescaling(1 / 255.0)])

    ours, theirs = build(tf.keras), build(tf_keras)
    x = _images()
    _close(ours.predict(x, verbose=0), theirs.predict(x, verbose=0))  # inference: no augmentation
    np.testing.assert_allclose(ours.predict(x, verbose=0), x / 255.0, rtol=1e-6)
    for _ in range(2):
        _close(ours(x, training=True), theirs(x, training=True))
    assert ours.weights == [] and theirs.weights == []
    ours.summary(print_fn=lambda *a, **k: None)


def test_in_a_dataset_map():
    ours, theirs = _pair("RandomRotation", (0.2,), {}, seed=21)
    x = _images((4, 8, 10, 3))
    got = [b.numpy() for b in tf.data.Dataset.from_tensor_slices(x).batch(2).map(lambda b: ours(b, training=True))]
    want = [b.numpy() for b in real_tf.data.Dataset.from_tensor_slices(x).batch(2).map(
        lambda b: theirs(b, training=True))]
    for g, w in zip(got, want):
        _close(g, w)


@pytest.mark.parametrize("name, args, kwargs", [
    ("RandomRotation", ((0.25, 0.25),), {}),
    ("RandomRotation", ((0.1, 0.1),), dict(fill_mode="constant", interpolation="nearest")),
    ("RandomZoom", ((0.3, 0.3), (-0.2, -0.2)), dict(fill_mode="reflect")),
    ("RandomTranslation", ((0.25, 0.25), (-0.1, -0.1)), dict(fill_mode="wrap")),
    ("RandomBrightness", ((0.2, 0.2),), {}),
    ("RandomHeight", ((0.5, 0.5),), {}),
    ("RandomWidth", ((-0.5, -0.5),), {}),
])
def test_fixed_factors_without_a_seed(name, args, kwargs):
    ours, theirs = _pair(name, args, kwargs, seed=None)
    x = _images()
    _close(ours(x), theirs(x))


def test_unseeded_draws_spread_over_the_factor_range():
    layer = tf.keras.layers.RandomBrightness((-0.2, 0.4), value_range=(0, 1))
    x = np.full((2000, 1, 1, 1), 0.3, np.float32)
    deltas = layer(x).numpy().ravel() - 0.3  # each image's delta: uniform on [-0.2, 0.4) of the range's width 1
    assert deltas.min() >= -0.2 - 1e-6 and deltas.max() < 0.4 + 1e-6
    assert abs(deltas.mean() - 0.1) < 0.02 and abs(deltas.std() - 0.6 / np.sqrt(12)) < 0.02
    flips = tf.keras.layers.RandomFlip("horizontal")(np.tile(np.array([0.0, 1.0], np.float32).reshape(1, 1, 2, 1),
                                                             (2000, 1, 1, 1)))
    assert abs(flips.numpy()[:, 0, 0, 0].mean() - 0.5) < 0.05
    first, second = tf.keras.layers.RandomRotation(0.2), tf.keras.layers.RandomRotation(0.2)
    assert not np.array_equal(first(_images()).numpy(), second(_images()).numpy())


@pytest.mark.parametrize("case", CASES, ids=IDS)
def test_configs_equal_tf_keras_and_round_trip(case):
    name, args, kwargs = case
    ours, theirs = _pair(name, args, kwargs, seed=9)
    ours_config, theirs_config = ours.get_config(), theirs.get_config()
    for config in (ours_config, theirs_config):
        config.pop("name")
    assert ours_config == theirs_config
    again = type(ours).from_config(ours.get_config())
    x = _images()
    _close(again(x), theirs(x))
    from_theirs = type(ours).from_config(theirs.get_config())
    assert from_theirs.get_config()["seed"] == 9


@pytest.mark.parametrize("build, error", [
    (lambda L: L.RandomFlip("diagonal"), ValueError),
    (lambda L: L.RandomRotation(0.2, fill_mode="mirror"), NotImplementedError),
    (lambda L: L.RandomRotation(0.2, interpolation="bicubic"), NotImplementedError),
    (lambda L: L.RandomRotation((0.3, 0.1)), ValueError),
    (lambda L: L.RandomZoom(1.5), ValueError),
    (lambda L: L.RandomZoom(0.2, (-1.5, 0.0)), ValueError),
    (lambda L: L.RandomTranslation(0.2, (0.5, 0.1)), ValueError),
    (lambda L: L.RandomTranslation(1.2, 0.1), ValueError),
    (lambda L: L.RandomTranslation(0.2, 1.1), ValueError),
    (lambda L: L.RandomContrast(-0.1), ValueError),
    (lambda L: L.RandomContrast(1.5), ValueError),
    (lambda L: L.RandomBrightness(1.5), ValueError),
    (lambda L: L.RandomBrightness((0.1, 0.2, 0.3)), ValueError),
    (lambda L: L.RandomBrightness("x"), ValueError),
    (lambda L: L.RandomBrightness(0.1, value_range=(0, 1, 2)), ValueError),
    (lambda L: L.RandomHeight((0.3, 0.1)), ValueError),
    (lambda L: L.RandomHeight(-1.5), ValueError),
    (lambda L: L.RandomWidth((0.3, 0.1)), ValueError),
    (lambda L: L.RandomWidth(0.2, interpolation="cubic"), NotImplementedError),
])
def test_constructor_errors_are_tf_keras(build, error):
    with pytest.raises(error) as theirs:
        build(tf_keras.layers)
    with pytest.raises(error) as ours:
        build(tf.keras.layers)
    message = str(theirs.value)
    for token in ("RandomFlip layer ",):  # tf_keras' message names the layer, whose number differs
        message = message.split(token)[0]
    assert str(ours.value).startswith(message.split(" received")[0])
    assert str(ours.value).endswith(str(theirs.value).split(" ")[-1])


def test_dict_inputs_are_refused():
    with pytest.raises(ValueError, match="can only process a tensor representing an image"):
        tf.keras.layers.RandomFlip()({"images": _images()})


@pytest.mark.parametrize("size", [(4, 4), (6, 3), (9, 12)])
def test_resizing_crop_to_aspect_ratio_and_smart_resize(size):
    ours = tf.keras.layers.Resizing(*size, crop_to_aspect_ratio=True)
    theirs = tf_keras.layers.Resizing(*size, crop_to_aspect_ratio=True)
    x = _images()
    _close(ours(x), theirs(x))
    _close(ours(x[0]), theirs(x[0]))
    from ember.keras.layers.preprocessing import smart_resize

    _close(smart_resize(x[0], size, "nearest"), tf_keras.preprocessing.image.smart_resize(x[0], size, "nearest"))


def _augmenting_classifier(keras):
    keras.backend.clear_session()
    layers = keras.layers
    return keras.Sequential([keras.Input((8, 10, 3)), layers.RandomFlip("horizontal", seed=1),
                             layers.RandomTranslation(0.1, 0.1, seed=2), layers.RandomContrast(0.2, seed=3),
                             layers.Rescaling(1 / 255.0), layers.Flatten(), layers.Dense(2)])


def test_fit_augments_and_files_cross_both_ways(tmp_path):
    ours = _augmenting_classifier(tf.keras)
    ours.compile("sgd", tf.keras.losses.SparseCategoricalCrossentropy(from_logits=True))
    x, y = _images((8, 8, 10, 3)), np.arange(8) % 2
    history = ours.fit(x, y, batch_size=4, epochs=2, verbose=0)
    assert np.all(np.isfinite(history.history["loss"]))
    ours.save(str(tmp_path / "ours.h5"))
    theirs = tf_keras.models.load_model(str(tmp_path / "ours.h5"), compile=False)
    assert [type(layer).__name__ for layer in theirs.layers] == [type(layer).__name__ for layer in ours.layers]
    _close(ours.predict(x, verbose=0), theirs.predict(x, verbose=0))
    theirs.save(str(tmp_path / "theirs.h5"))
    again = tf.keras.models.load_model(str(tmp_path / "theirs.h5"), compile=False)
    assert again.layers[1].get_config() == ours.layers[1].get_config()
    _close(again.predict(x, verbose=0), theirs.predict(x, verbose=0))


def test_older_names_under_layers_experimental_preprocessing():
    names = [n for n in dir(tf_keras.layers.experimental.preprocessing)
             if not n.startswith("_") and n not in ("HashedCrossing", "PreprocessingLayer")]
    for name in names:
        assert getattr(tf.keras.layers.experimental.preprocessing, name) is getattr(tf.keras.layers, name), name


def test_unseeded_layers_after_set_random_seed_draw_as_tf_keras():
    x = _images()
    outputs = []
    for keras in (tf.keras, tf_keras):
        keras.utils.set_random_seed(1234)
        layers = [keras.layers.RandomRotation(0.3), keras.layers.RandomZoom(0.2), keras.layers.RandomFlip()]
        outputs.append([np.asarray(layer(x)) for layer in layers for _ in range(2)])
    for got, want in zip(*outputs):
        _close(got, want)


@pytest.mark.parametrize("name, args", [("RandomRotation", (0.2,)), ("RandomZoom", (0.3,)), ("RandomBrightness", (0.2,))])
def test_float16_compute_dtype(name, args):
    ours = getattr(tf.keras.layers, name)(*args, seed=4, dtype="mixed_float16")
    theirs = getattr(tf_keras.layers, name)(*args, seed=4, dtype="mixed_float16")
    x = _images()
    got, want = ours(x).numpy(), theirs(x).numpy()
    assert got.dtype == want.dtype == np.float16
    np.testing.assert_allclose(got.astype(np.float32), want.astype(np.float32), rtol=2e-3, atol=0.25)


def test_float16_contrast_which_tensorflow_runs_only_on_gpus():
    """TensorFlow's AdjustContrastv2 has no float16 CPU kernel (tf_keras' layer fails there); ember's computes
    float16 images as TensorFlow's GPU kernel would: close to the float32 result."""
    x = _images()
    half = tf.keras.layers.RandomContrast(0.4, seed=4, dtype="mixed_float16")(x).numpy()
    full = tf_keras.layers.RandomContrast(0.4, seed=4)(x).numpy()
    assert half.dtype == np.float16
    np.testing.assert_allclose(half.astype(np.float32), full, rtol=2e-3, atol=0.5)
