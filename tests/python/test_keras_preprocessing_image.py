"""Keras 2's image augmentation (python/ember/keras/preprocessing/image.py and image_iterators.py) against
tf_keras: with the same NumPy seed, ImageDataGenerator's batches from flow and flow_from_directory are
tf_keras' exactly (the same sample order, random transforms, pixels, labels, sample weights, file order and
saved file names), as are fit's statistics, the transform parameters and the module's random_*/apply_*
functions; model.fit trains on a flow; bad arguments raise as tf_keras does."""

import os
import warnings

import numpy as np
import pytest
import tf_keras
from PIL import Image
from tf_keras.preprocessing import image as their_image

import ember
from ember.keras.preprocessing import image as our_image

RNG = np.random.default_rng(31)
IMAGES = RNG.uniform(0, 255, size=(10, 12, 14, 3)).astype(np.float32)
LABELS = np.arange(10) % 3


def _assert_same(ours, theirs, what=""):
    if isinstance(theirs, (list, tuple)):
        assert type(ours) is type(theirs) and len(ours) == len(theirs), what
        for a, b in zip(ours, theirs):
            _assert_same(a, b, what)
        return
    ours, theirs = np.asarray(ours), np.asarray(theirs)
    assert ours.dtype == theirs.dtype and ours.shape == theirs.shape, (what, ours.dtype, theirs.dtype, ours.shape,
                                                                       theirs.shape)
    np.testing.assert_array_equal(ours, theirs, err_msg=str(what))


def _both(**kwargs):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return our_image.ImageDataGenerator(**kwargs), their_image.ImageDataGenerator(**kwargs)


def _assert_same_iterators(ours, theirs, passes=2):
    """Every batch by index, a reshuffled epoch, then next() past the end (it wraps around)."""
    assert len(ours) == len(theirs)
    for index in range(len(theirs)):
        _assert_same(ours[index], theirs[index], index)
    np.random.seed(2)
    theirs.on_epoch_end()
    np.random.seed(2)
    ours.on_epoch_end()
    _assert_same(ours[len(theirs) - 1], theirs[len(theirs) - 1], "after on_epoch_end")
    for step in range(passes * len(theirs) + 1):
        _assert_same(next(ours), next(theirs), f"next {step}")


AUGMENTATIONS = [
    {"rotation_range": 30},
    {"width_shift_range": 0.2, "height_shift_range": 3},  # a fraction, and whole pixels from range(3)
    {"width_shift_range": [1, 2], "height_shift_range": 0.1},  # pixels from a list
    {"shear_range": 20, "zoom_range": 0.3, "fill_mode": "reflect"},
    {"zoom_range": (0.5, 1.2), "fill_mode": "constant", "cval": 7.0},
    {"horizontal_flip": True, "vertical_flip": True, "channel_shift_range": 40.0},
    {"brightness_range": (0.5, 1.5)},
    {"rotation_range": 15, "width_shift_range": 0.1, "rescale": 1 / 255.0, "samplewise_center": True,
     "samplewise_std_normalization": True, "fill_mode": "wrap"},
    {"preprocessing_function": lambda a: a * 2, "interpolation_order": 0, "rotation_range": 45},
    {"data_format": "channels_first", "rotation_range": 20, "width_shift_range": 0.2, "horizontal_flip": True},
    {"dtype": "float64", "rotation_range": 10, "zoom_range": 0.1},
]


def _images_for(config):
    return IMAGES.transpose(0, 3, 1, 2).copy() if config.get("data_format") == "channels_first" else IMAGES


@pytest.mark.parametrize("config", AUGMENTATIONS, ids=range(len(AUGMENTATIONS)))
def test_flow_batches_equal_tf_keras_with_a_seed(config):
    ours, theirs = _both(**config)
    x = _images_for(config)
    _assert_same_iterators(ours.flow(x, LABELS, batch_size=4, seed=5), theirs.flow(x, LABELS, batch_size=4, seed=5))
    kwargs = {"batch_size": 3, "shuffle": False, "seed": 1, "sample_weight": np.arange(10.0)}
    _assert_same_iterators(ours.flow(x, LABELS, **kwargs), theirs.flow(x, LABELS, **kwargs))
    np.random.seed(9)
    their_image_out = theirs.random_transform(x[0].copy())
    np.random.seed(9)
    _assert_same(ours.random_transform(x[0].copy()), their_image_out)
    assert ours.get_random_transform(x[0].shape, seed=4) == theirs.get_random_transform(x[0].shape, seed=4)
    params = theirs.get_random_transform(x[0].shape, seed=8)
    _assert_same(ours.apply_transform(x[1].copy(), params), theirs.apply_transform(x[1].copy(), params))


@pytest.mark.parametrize("config", [
    {"featurewise_center": True, "featurewise_std_normalization": True, "rotation_range": 10},
    {"featurewise_center": True, "data_format": "channels_first"},
    {"zca_whitening": True, "featurewise_std_normalization": True, "zca_epsilon": 1e-3},
    {"featurewise_std_normalization": True, "rescale": 0.5, "horizontal_flip": True},
])
@pytest.mark.parametrize("augment", [False, True])
def test_fit_statistics_and_standardized_batches_equal_tf_keras(config, augment):
    ours, theirs = _both(**config)
    assert (ours.featurewise_center, ours.featurewise_std_normalization) == \
        (theirs.featurewise_center, theirs.featurewise_std_normalization)
    x = _images_for(config)
    theirs.fit(x, augment=augment, rounds=2, seed=3)
    ours.fit(x, augment=augment, rounds=2, seed=3)
    for name in ("mean", "std", "zca_whitening_matrix"):
        if getattr(theirs, name) is None:
            assert getattr(ours, name) is None
        else:
            _assert_same(getattr(ours, name), getattr(theirs, name), name)
    _assert_same(next(ours.flow(x, batch_size=6, seed=7)), next(theirs.flow(x, batch_size=6, seed=7)))
    _assert_same(ours.standardize(x[:2].copy()), theirs.standardize(x[:2].copy()))


def test_standardize_before_fit_warns_and_leaves_the_feature_wise_steps_out():
    ours, _ = _both(featurewise_center=True, zca_whitening=True)
    with pytest.warns(UserWarning, match="hasn't been fit"):
        out = ours.standardize(IMAGES[0].copy())
    _assert_same(out, IMAGES[0])


def test_flow_options_equal_tf_keras():
    config = {"rotation_range": 20, "validation_split": 0.3}
    ours, theirs = _both(**config)
    misc = [np.arange(10.0), np.arange(20).reshape(10, 2)]
    cases = [
        ((IMAGES, misc), LABELS, {"batch_size": 4, "seed": 2}),  # extra input arrays
        ((IMAGES, misc[0]), None, {"batch_size": 4, "seed": 2}),
        (IMAGES, None, {"batch_size": 3, "seed": 4, "sample_weight": np.ones(10)}),  # no y: images only
        (IMAGES, LABELS, {"batch_size": 2, "seed": 6, "subset": "training", "ignore_class_split": True}),
        (IMAGES, LABELS, {"batch_size": 2, "seed": 6, "subset": "validation"}),
        (IMAGES, np.zeros(10), {"batch_size": 4, "seed": 1, "subset": "validation", "sample_weight": np.ones(10)}),
    ]
    for x, y, kwargs in cases:
        _assert_same_iterators(ours.flow(x, y, **kwargs), theirs.flow(x, y, **kwargs))
    # no seed: the same global state gives the same batches
    np.random.seed(12)
    their_batch = theirs.flow(IMAGES, LABELS, batch_size=5)[1]
    np.random.seed(12)
    _assert_same(ours.flow(IMAGES, LABELS, batch_size=5)[1], their_batch)


def test_flow_save_to_dir_writes_tf_keras_file_names(tmp_path):
    ours, theirs = _both(rotation_range=20)
    names = []
    for which, generator in (("ours", ours), ("theirs", theirs)):
        folder = tmp_path / which
        folder.mkdir()
        batch = generator.flow(IMAGES, LABELS, batch_size=4, seed=3, save_to_dir=str(folder), save_prefix="aug",
                               save_format="png")[1]
        names.append(sorted(os.listdir(folder)))
        assert len(names[-1]) == 4
        saved = np.asarray(Image.open(folder / names[-1][0]))
        assert saved.shape == (12, 14, 3)
    assert names[0] == names[1]
    assert len(batch) == 2


def test_module_functions_equal_tf_keras():
    x = IMAGES[0].transpose(2, 0, 1).copy()  # the functions' default axes are channels first
    calls = [
        ("random_rotation", (x, 40), {}),
        ("random_rotation", (IMAGES[0], 40), {"row_axis": 0, "col_axis": 1, "channel_axis": 2, "fill_mode": "constant",
                                              "cval": 3.0, "interpolation_order": 3}),
        ("random_shift", (x, 0.2, 0.3), {"fill_mode": "reflect"}),
        ("random_shear", (x, 30), {"fill_mode": "wrap"}),
        ("random_zoom", (x, (0.6, 1.3)), {}),
        ("random_zoom", (x, (1, 1)), {}),
        ("random_channel_shift", (x, 50.0), {}),
        ("random_brightness", (IMAGES[0], (0.3, 1.7)), {}),
        ("random_brightness", (IMAGES[0] * 3 - 200, (0.3, 1.7)), {"scale": False}),
    ]
    for name, args, kwargs in calls:
        np.random.seed(17)
        theirs = getattr(their_image, name)(*args, **kwargs)
        np.random.seed(17)
        _assert_same(getattr(our_image, name)(*args, **kwargs), theirs, name)
    fixed = [
        ("apply_affine_transform", (x,), {"theta": 25, "tx": 2, "ty": -3.5, "shear": 10, "zx": 0.8, "zy": 1.1}),
        ("apply_affine_transform", (IMAGES[0],), {"theta": 25, "row_axis": 0, "col_axis": 1, "channel_axis": 2,
                                                   "order": 0}),
        ("apply_affine_transform", (x,), {}),
        ("apply_channel_shift", (x, 30.0), {}),
        ("apply_channel_shift", (IMAGES[0], -20.0, 2), {}),
        ("apply_brightness_shift", (IMAGES[0], 1.4), {}),
    ]
    for name, args, kwargs in fixed:
        _assert_same(getattr(our_image, name)(*args, **kwargs), getattr(their_image, name)(*args, **kwargs), name)
    img = our_image.array_to_img(IMAGES[0])
    _assert_same(our_image.img_to_array(img), their_image.img_to_array(their_image.array_to_img(IMAGES[0])))
    assert ember.keras.preprocessing.image.ImageDataGenerator is our_image.ImageDataGenerator


def _write_tree(root):
    """root/<class>/...: three classes of PNG, JPEG and BMP files of several sizes and colour types, a nested
    folder, a file that is not an image, and a folder linked in by a symbolic link."""
    for c, name in enumerate(["cats", "dogs", "zebras"]):
        folder = root / name
        (folder / "nested").mkdir(parents=True)
        for i in range(4 + c):
            h, w = [(20, 30), (31, 17), (16, 16), (9, 40)][(i + c) % 4]
            ext, fmt = [("png", "PNG"), ("jpg", "JPEG"), ("bmp", "BMP"), ("jpeg", "JPEG")][(i + 2 * c) % 4]
            pixels = RNG.integers(0, 256, (h, w, 3), dtype=np.uint8)
            image = Image.fromarray(pixels)
            if i % 3 == 2 and fmt == "PNG":
                image = image.convert("LA" if c == 1 else "L")
            target = folder / "nested" if i == 1 else folder
            image.save(target / f"img_{i:02d}.{ext}", format=fmt)
        (folder / "notes.txt").write_text("not an image")
    outside = root.parent / f"{root.name}_linked"
    outside.mkdir()
    Image.fromarray(RNG.integers(0, 256, (10, 10, 3), dtype=np.uint8)).save(outside / "linked.png")
    os.symlink(outside, root / "dogs" / "link")


DIRECTORY_CASES = [
    ({}, {"target_size": (16, 20), "batch_size": 4, "seed": 3}),
    ({"rotation_range": 25, "horizontal_flip": True, "rescale": 1 / 255.0},
     {"target_size": (12, 12), "batch_size": 5, "seed": 1, "class_mode": "sparse", "interpolation": "bilinear"}),
    ({}, {"target_size": (10, 8), "batch_size": 3, "color_mode": "grayscale", "class_mode": "binary",
          "classes": ["zebras", "cats"], "shuffle": False}),
    ({"zoom_range": 0.2}, {"target_size": (9, 11), "batch_size": 4, "color_mode": "rgba", "class_mode": "input",
                           "seed": 5, "follow_links": True, "keep_aspect_ratio": True}),
    ({"validation_split": 0.4}, {"target_size": (8, 8), "batch_size": 2, "subset": "validation", "seed": 2,
                                 "class_mode": None}),
    ({"validation_split": 0.4, "data_format": "channels_first", "width_shift_range": 0.2},
     {"target_size": (8, 10), "batch_size": 3, "subset": "training", "seed": 2, "interpolation": "bicubic"}),
]


@pytest.mark.parametrize("config, kwargs", DIRECTORY_CASES, ids=range(len(DIRECTORY_CASES)))
def test_flow_from_directory_equals_tf_keras(tmp_path, capsys, config, kwargs):
    root = tmp_path / "images"
    _write_tree(root)
    ours, theirs = _both(**config)
    their_iterator = theirs.flow_from_directory(str(root), **kwargs)
    our_iterator = ours.flow_from_directory(str(root), **kwargs)
    printed = capsys.readouterr().out.splitlines()
    assert printed[0] == printed[1] and printed[0].startswith("Found ")
    assert our_iterator.filenames == their_iterator.filenames
    assert our_iterator.filepaths == their_iterator.filepaths
    assert our_iterator.class_indices == their_iterator.class_indices
    _assert_same(our_iterator.classes, their_iterator.classes)
    _assert_same(our_iterator.labels, their_iterator.labels)
    assert our_iterator.image_shape == their_iterator.image_shape
    _assert_same_iterators(our_iterator, their_iterator, passes=1)


def test_model_fit_trains_on_a_flow():
    rng = np.random.default_rng(5)
    # Images of widely different brightness: the label (bright or not) is easy for one Dense layer.
    x = (rng.uniform(0, 1, size=(32, 8, 8, 1)) * rng.uniform(0, 2, size=(32, 1, 1, 1))).astype(np.float32)
    y = (x.mean(axis=(1, 2, 3)) > 0.5).astype(np.float32)
    generator = our_image.ImageDataGenerator(horizontal_flip=True, vertical_flip=True)
    # Zero weights: the run is deterministic (flow's seed fixes the order and the flips), so the loss must
    # fall from log(2) whatever the process's random state (a random start made it flaky).
    model = ember.keras.Sequential([ember.keras.layers.Flatten(input_shape=(8, 8, 1)),
                                    ember.keras.layers.Dense(1, activation="sigmoid", kernel_initializer="zeros")])
    model.compile(ember.keras.optimizers.Adam(0.05), "binary_crossentropy")
    flow = generator.flow(x, y, batch_size=8, seed=0)
    history = model.fit(flow, epochs=4, verbose=0)
    assert len(history.history["loss"]) == 4
    assert history.history["loss"][-1] < history.history["loss"][0]
    assert flow.total_batches_seen == 16  # four batches an epoch, read by index
    their_model = tf_keras.Sequential([tf_keras.layers.Flatten(input_shape=(8, 8, 1)), tf_keras.layers.Dense(1)])
    their_model.set_weights(model.get_weights())  # the same weights load, the same predictions come out
    np.testing.assert_allclose(np.asarray(model.layers[1](model.layers[0](x))),
                               1 / (1 + np.exp(-their_model.predict(x, verbose=0))), rtol=1e-5, atol=1e-6)


def test_bad_arguments_raise_as_tf_keras():
    bad_generators = [{"data_format": "channels_middle"}, {"zoom_range": (0.5, 1, 2)}, {"zoom_range": "big"},
                      {"brightness_range": 0.5}, {"validation_split": 1.5}]
    for kwargs in bad_generators:
        with pytest.raises(ValueError):
            their_image.ImageDataGenerator(**kwargs)
        with pytest.raises(ValueError):
            our_image.ImageDataGenerator(**kwargs)
    ours, _ = _both(validation_split=0.5)
    with pytest.raises(ValueError, match="rank 4"):
        ours.fit(IMAGES[0])
    with pytest.raises(ValueError, match="rank 4"):
        ours.flow(IMAGES[0])
    with pytest.raises(ValueError, match="same length"):
        ours.flow(IMAGES, LABELS[:3])
    with pytest.raises(ValueError, match="same length"):
        ours.flow(IMAGES, LABELS, sample_weight=np.ones(2))
    with pytest.raises(ValueError, match="Invalid subset"):
        ours.flow(IMAGES, LABELS, subset="test")
    with pytest.raises(ValueError, match="different number of classes"):
        ours.flow(IMAGES, np.sort(LABELS), subset="training")
    with pytest.raises(ValueError, match="length 3"):
        ours.flow(IMAGES, batch_size=4)[3]
    with pytest.raises(ValueError, match="distinct"):
        our_image.apply_affine_transform(IMAGES[0], theta=3, row_axis=0, col_axis=0, channel_axis=2)
    with pytest.raises(ValueError, match="multi-channel"):
        our_image.apply_affine_transform(IMAGES[0, :, :, 0], theta=3)
    with pytest.raises(ValueError, match="zoom_range"):
        our_image.random_zoom(IMAGES[0], (1, 2, 3))
    with pytest.raises(ValueError, match="brightness_range"):
        our_image.random_brightness(IMAGES[0], (1,))
    with pytest.raises(TypeError, match="DataFrame"):
        ours.flow_from_dataframe(None)


def test_flow_from_directory_bad_arguments_raise(tmp_path):
    root = tmp_path / "images"
    _write_tree(root)
    ours, _ = _both()
    with pytest.raises(ValueError, match="Invalid class_mode"):
        ours.flow_from_directory(str(root), class_mode="onehot")
    with pytest.raises(ValueError, match="Invalid color mode"):
        ours.flow_from_directory(str(root), color_mode="cmyk")
    with pytest.raises(ValueError, match="Invalid subset"):
        ours.flow_from_directory(str(root), subset="test")


class _IndexOnlyIterator(our_image.NumpyArrayIterator):
    def next(self):
        raise AssertionError("fit must read a Sequence by index, not with next()")


def test_fit_without_shuffling_reads_the_iterator_by_index():
    x = RNG.uniform(size=(12, 4, 4, 1)).astype(np.float32)
    flow = _IndexOnlyIterator(x, x.sum(axis=(1, 2, 3)), our_image.ImageDataGenerator(), batch_size=5, seed=0)
    model = ember.keras.Sequential([ember.keras.layers.Flatten(input_shape=(4, 4, 1)), ember.keras.layers.Dense(1)])
    model.compile("sgd", "mse")
    model.fit(flow, epochs=2, shuffle=False, verbose=0)
    assert flow.total_batches_seen == 6


def test_an_iterator_subclass_yields_tf_keras_index_batches():
    def make(base):
        class Indices(base):
            def _get_batches_of_transformed_samples(self, index_array):
                return np.asarray(index_array)

        return Indices(11, 4, True, 3)

    ours, theirs = make(our_image.Iterator), make(their_image.Iterator)
    _assert_same_iterators(ours, theirs, passes=3)
    empty = our_image.Iterator(0, 4, False, None)
    assert len(empty) == 0


def _write_dataframe_images(folder):
    """Eight images of different sizes and formats, a text file, and a DataFrame naming them (and two files
    that are no images) with every kind of label column."""
    import pandas as pd

    folder.mkdir()
    names = []
    for i in range(8):
        ext, fmt = [("png", "PNG"), ("jpg", "JPEG"), ("bmp", "BMP")][i % 3]
        Image.fromarray(RNG.integers(0, 256, (10 + i, 12, 3), dtype=np.uint8)).save(folder / f"im{i}.{ext}",
                                                                                    format=fmt)
        names.append(f"im{i}.{ext}")
    (folder / "notes.txt").write_text("not an image")
    return pd.DataFrame({
        "filename": names + ["missing.png", "notes.txt"],
        "class": ["a", "b", "a", "c", "b", "a", "c", "b", "a", "b"],
        "pair": ["x", "y", "y", "x", "x", "y", "x", "y", "x", "y"],
        "tags": [["a", "b"], ["c"], ("a",), ["b", "c"], ["a"], ["b"], ["c"], ["a", "c"], ["a"], ["b"]],
        "weight": np.arange(10, dtype=np.float64) / 2,
        "r1": np.arange(10, dtype=np.float64), "r2": np.arange(10) * 2,
    })


DATAFRAME_CASES = [
    ({}, {"target_size": (8, 8), "batch_size": 3, "seed": 3}),
    ({"rescale": 1 / 255.0, "validation_split": 0.25},
     {"target_size": (8, 9), "batch_size": 3, "shuffle": False, "class_mode": "sparse", "weight_col": "weight",
      "subset": "training"}),
    ({"validation_split": 0.25}, {"target_size": (6, 6), "batch_size": 2, "seed": 1, "subset": "validation"}),
    ({}, {"target_size": (8, 8), "batch_size": 4, "shuffle": False, "class_mode": "raw", "y_col": ["r1", "r2"]}),
    ({}, {"target_size": (8, 8), "batch_size": 4, "seed": 2, "class_mode": "raw", "y_col": "r1"}),
    ({}, {"target_size": (8, 8), "batch_size": 3, "shuffle": False, "class_mode": "multi_output",
          "y_col": ["r1", "r2"]}),
    ({"horizontal_flip": True}, {"target_size": (8, 8), "batch_size": 3, "seed": 4, "y_col": "tags"}),
    ({}, {"target_size": (8, 8), "batch_size": 3, "shuffle": False, "classes": ["b", "a"]}),
    ({}, {"target_size": (8, 8), "batch_size": 3, "shuffle": False, "y_col": "tags", "classes": ["c", "b"]}),
    ({}, {"target_size": (8, 8), "batch_size": 3, "shuffle": False, "class_mode": "binary", "y_col": "pair",
          "color_mode": "grayscale"}),
    ({}, {"target_size": (7, 8), "batch_size": 4, "seed": 5, "class_mode": "input", "color_mode": "rgba"}),
    ({}, {"target_size": (8, 8), "batch_size": 4, "shuffle": False, "class_mode": None}),
    ({}, {"target_size": (8, 8), "batch_size": 5, "shuffle": False, "validate_filenames": False,
          "class_mode": None, "x_col": "filename"}),
]


@pytest.mark.parametrize("config, kwargs", DATAFRAME_CASES, ids=range(len(DATAFRAME_CASES)))
def test_flow_from_dataframe_equals_tf_keras(tmp_path, capsys, config, kwargs):
    frame = _write_dataframe_images(tmp_path / "images")
    if not kwargs.get("validate_filenames", True):
        frame = frame.iloc[:8]  # unvalidated rows must name images that load
    ours, theirs = _both(**config)
    with warnings.catch_warnings(record=True) as their_warnings:
        warnings.simplefilter("always")
        their_iterator = theirs.flow_from_dataframe(frame, str(tmp_path / "images"), **kwargs)
    with warnings.catch_warnings(record=True) as our_warnings:
        warnings.simplefilter("always")
        our_iterator = ours.flow_from_dataframe(frame, str(tmp_path / "images"), **kwargs)
    assert [str(w.message) for w in our_warnings] == [str(w.message) for w in their_warnings]
    printed = capsys.readouterr().out.splitlines()
    assert printed[0] == printed[1] and printed[0].startswith("Found ")
    assert our_iterator.filenames == their_iterator.filenames
    assert our_iterator.filepaths == their_iterator.filepaths
    if kwargs.get("class_mode", "categorical") in ("categorical", "binary", "sparse"):
        assert our_iterator.class_indices == their_iterator.class_indices
        assert our_iterator.classes == their_iterator.classes
    if kwargs.get("class_mode", "categorical") in ("input", None):  # no labels: tf_keras' has no classes
        assert not hasattr(our_iterator, "classes") and not hasattr(their_iterator, "classes")
    else:
        _assert_same(our_iterator.labels, their_iterator.labels)
    _assert_same(our_iterator.sample_weight, their_iterator.sample_weight)
    _assert_same_iterators(our_iterator, their_iterator, passes=1)


def test_flow_from_dataframe_of_absolute_paths_and_fit(tmp_path):
    frame = _write_dataframe_images(tmp_path / "images").iloc[:8].copy()
    frame["filename"] = [str(tmp_path / "images" / name) for name in frame["filename"]]
    iterator = our_image.ImageDataGenerator(rescale=1 / 255.0).flow_from_dataframe(
        frame, target_size=(8, 8), batch_size=4, class_mode="sparse", seed=0)
    model = ember.keras.Sequential([ember.keras.layers.Flatten(input_shape=(8, 8, 3)),
                                    ember.keras.layers.Dense(3)])
    model.compile("sgd", ember.keras.losses.SparseCategoricalCrossentropy(from_logits=True))
    history = model.fit(iterator, epochs=2, verbose=0)
    assert len(history.history["loss"]) == 2 and np.all(np.isfinite(history.history["loss"]))


BAD_DATAFRAME_ARGUMENTS = [
    {"class_mode": "foo"}, {"y_col": "weight"}, {"weight_col": "class"},
    {"class_mode": "multi_output", "y_col": "r1"}, {"class_mode": "binary"}, {"class_mode": "sparse", "y_col": "tags"},
]


@pytest.mark.parametrize("kwargs", BAD_DATAFRAME_ARGUMENTS, ids=range(len(BAD_DATAFRAME_ARGUMENTS)))
def test_flow_from_dataframe_bad_arguments_raise_as_tf_keras(tmp_path, kwargs):
    frame = _write_dataframe_images(tmp_path / "images")
    ours, theirs = _both()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        with pytest.raises(Exception) as theirs_raised:
            theirs.flow_from_dataframe(frame, str(tmp_path / "images"), **kwargs)
        with pytest.raises(type(theirs_raised.value), match=None) as ours_raised:
            ours.flow_from_dataframe(frame, str(tmp_path / "images"), **kwargs)
    # The class-mode message lists a set, whose order differs between processes.
    assert str(ours_raised.value).split(";")[0] == str(theirs_raised.value).split(";")[0]


def test_flow_from_dataframe_refuses_non_string_filenames(tmp_path):
    frame = _write_dataframe_images(tmp_path / "images").astype({"filename": object})
    frame.loc[0, "filename"] = 5
    ours, theirs = _both()
    for generator in (ours, theirs):
        with pytest.raises(TypeError, match="must be strings"):
            generator.flow_from_dataframe(frame, str(tmp_path / "images"))
