"""Keras 2's image helpers (python/ember/keras/utils/image_utils.py) against tf_keras: load_img /
img_to_array / array_to_img / save_img, smart_resize, and image_dataset_from_directory on a generated tree of
JPEG, PNG, GIF and BMP files (the same files in the same order, labels and pixels)."""
import io
import shutil

import numpy as np
import pytest
import tensorflow as tf
import tf_keras
from PIL import Image

import ember

RNG = np.random.default_rng(23)


ALL_FORMATS = [("jpg", "JPEG", {"quality": 90}), ("png", "PNG", {}), ("bmp", "BMP", {}), ("gif", "GIF", {}),
               ("jpeg", "JPEG", {})]
# decode_image refuses 1 channel for GIF and BMP and 4 for JPEG (as TensorFlow): trees for those modes.
FORMATS_FOR = {"grayscale": [f for f in ALL_FORMATS if f[1] in ("JPEG", "PNG")],
               "rgba": [f for f in ALL_FORMATS if f[1] in ("PNG", "BMP")]}


def _write_tree(root, formats=ALL_FORMATS):
    """root/<class>/<files>: three classes, several formats, sizes and colour types mixed, a nested folder and
    a file that is not an image."""
    sizes = [(20, 30), (31, 17), (16, 16), (9, 40), (25, 25)]
    for c, name in enumerate(["cats", "dogs", "zebras"]):
        folder = root / name
        (folder / "more").mkdir(parents=True)
        for i in range(5 + c):
            h, w = sizes[(i + c) % len(sizes)]
            ext, fmt, kwargs = formats[(i + 2 * c) % len(formats)]
            pixels = RNG.integers(0, 256, (h, w, 3), dtype=np.uint8)
            image = Image.fromarray(pixels)
            if i % 4 == 3 and fmt == "PNG":
                image = image.convert("L")
            target = folder / "more" if i == 2 else folder
            image.save(target / f"img_{i:02d}.{ext}", format=fmt, **kwargs)
        (folder / "notes.txt").write_text("not an image")
    return ["cats", "dogs", "zebras"]


def _both(root, **kwargs):
    ours = ember.keras.utils.image_dataset_from_directory(str(root), **kwargs)
    theirs = tf_keras.utils.image_dataset_from_directory(str(root), **kwargs)
    return ours, theirs


def _assert_same_datasets(ours, theirs, exact=True):
    assert ours.class_names == theirs.class_names
    assert ours.file_paths == theirs.file_paths
    a, b = list(ours), list(theirs)
    assert len(a) == len(b)
    for x, y in zip(a, b):
        x, y = (x, y) if isinstance(x, tuple) else ((x,), (y,))
        for u, v in zip(x, y):
            assert u.dtype.name == v.dtype.name and tuple(u.shape) == tuple(v.shape)
            if exact:
                np.testing.assert_array_equal(u.numpy(), v.numpy())
            else:  # resized pixels: float32 rounding of the same formula
                np.testing.assert_allclose(u.numpy(), v.numpy(), rtol=0, atol=2e-3)


@pytest.mark.parametrize("kwargs", [
    dict(label_mode="int"),
    dict(label_mode="categorical", color_mode="grayscale", image_size=(12, 10)),
    dict(label_mode=None, color_mode="rgba", batch_size=4),
    dict(labels=None, image_size=(8, 8), interpolation="nearest"),
    dict(batch_size=None, image_size=(10, 14), crop_to_aspect_ratio=True),
    dict(class_names=["zebras", "cats", "dogs"], image_size=(6, 6)),
    dict(validation_split=0.25, subset="training", image_size=(6, 6)),
    dict(validation_split=0.25, subset="validation", image_size=(6, 6), label_mode="categorical"),
])
def test_image_dataset_matches_tf_keras_unshuffled(tmp_path, kwargs):
    _write_tree(tmp_path, FORMATS_FOR.get(kwargs.get("color_mode"), ALL_FORMATS))
    kwargs = dict(dict(image_size=(16, 20), batch_size=5, shuffle=False), **kwargs)
    ours, theirs = _both(tmp_path, **kwargs)
    _assert_same_datasets(ours, theirs, exact=kwargs.get("interpolation") == "nearest")


def test_binary_labels_a_list_of_labels_and_subset_both(tmp_path):
    _write_tree(tmp_path)
    shutil.rmtree(tmp_path / "zebras")
    ours, theirs = _both(tmp_path, label_mode="binary", image_size=(8, 8), shuffle=False, batch_size=3)
    _assert_same_datasets(ours, theirs, exact=False)
    count = len(ours.file_paths)
    labels = [i % 3 for i in range(count)]
    ours, theirs = _both(tmp_path, labels=labels, image_size=(8, 8), shuffle=False)
    _assert_same_datasets(ours, theirs, exact=False)
    ours, theirs = _both(tmp_path, validation_split=0.3, subset="both", seed=4, image_size=(8, 8), shuffle=True)
    for a, b in zip(ours, theirs):
        assert a.file_paths == b.file_paths and a.class_names == b.class_names
    # The validation part keeps its order: equal batches.
    _assert_same_datasets(ours[1], theirs[1], exact=False)


def test_shuffle_picks_tf_keras_files_in_its_order(tmp_path):
    _write_tree(tmp_path)
    ours, theirs = _both(tmp_path, seed=11, image_size=(8, 8), batch_size=4)
    assert ours.file_paths == theirs.file_paths
    ours_images = sorted(x.numpy().tobytes() for batch, _ in ours for x in batch)
    theirs_images = sorted(x.numpy().tobytes() for batch, _ in theirs for x in batch)
    assert len(ours_images) == len(theirs_images)


@pytest.mark.parametrize("kwargs,error", [
    (dict(labels="folders"), ValueError), (dict(label_mode="sparse"), ValueError),
    (dict(color_mode="cmyk"), ValueError), (dict(validation_split=0.2), ValueError),
    (dict(validation_split=0.2, subset="training"), ValueError), (dict(label_mode="binary"), ValueError),
    (dict(class_names=["a", "b"]), ValueError), (dict(interpolation="sinc"), NotImplementedError),
    (dict(labels=[0, 1]), ValueError), (dict(extra=1), TypeError),
])
def test_image_dataset_errors_are_tf_keras(tmp_path, kwargs, error):
    _write_tree(tmp_path)
    with pytest.raises(error):
        tf_keras.utils.image_dataset_from_directory(str(tmp_path), **kwargs)
    with pytest.raises(error):
        ember.keras.utils.image_dataset_from_directory(str(tmp_path), **kwargs)


def test_decode_in_a_dataset_map(tmp_path):
    names = _write_tree(tmp_path)
    paths = sorted(str(p) for p in (tmp_path / names[0]).glob("*.jp*g"))
    ours = ember.data.Dataset.from_tensor_slices(paths).map(
        lambda p: ember.io.decode_jpeg(ember.io.read_file(p), channels=1)).batch(1)
    theirs = tf.data.Dataset.from_tensor_slices(paths).map(
        lambda p: tf.io.decode_jpeg(tf.io.read_file(p), channels=1)).batch(1)
    for a, b in zip(ours, theirs):
        np.testing.assert_array_equal(a.numpy(), b.numpy())


@pytest.mark.parametrize("color_mode", ["rgb", "rgba", "grayscale"])
@pytest.mark.parametrize("target_size,interpolation,keep", [(None, "nearest", False), ((11, 7), "bilinear", False),
                                                            ((8, 8), "bicubic", True), ((30, 5), "lanczos", True)])
def test_load_img_and_img_to_array_match_tf_keras(tmp_path, color_mode, target_size, interpolation, keep):
    _write_tree(tmp_path)
    for path in sorted((tmp_path / "dogs").glob("*.*")):
        if path.suffix == ".txt":
            continue
        kwargs = dict(color_mode=color_mode, target_size=target_size, interpolation=interpolation,
                      keep_aspect_ratio=keep)
        ours = ember.keras.utils.load_img(path, **kwargs)
        theirs = tf_keras.utils.load_img(path, **kwargs)
        assert ours.mode == theirs.mode and ours.size == theirs.size
        for data_format in ("channels_last", "channels_first"):
            a = ember.keras.utils.img_to_array(ours, data_format=data_format)
            b = tf_keras.utils.img_to_array(theirs, data_format=data_format)
            assert a.dtype == b.dtype
            np.testing.assert_array_equal(a, b)


def test_array_to_img_and_save_img_match_tf_keras(tmp_path):
    for array in (RNG.normal(size=(5, 6, 3)), RNG.uniform(0, 255, (4, 4, 4)), RNG.uniform(0, 1, (3, 7, 1)),
                  RNG.uniform(0, 1000, (3, 3, 1))):
        for scale in (True, False):
            ours = ember.keras.utils.array_to_img(array, scale=scale)
            theirs = tf_keras.utils.array_to_img(array, scale=scale)
            assert ours.mode == theirs.mode
            np.testing.assert_array_equal(np.asarray(ours), np.asarray(theirs))
    array = RNG.uniform(0, 255, (6, 5, 4))
    ember.keras.utils.save_img(tmp_path / "ours.png", array)
    tf_keras.utils.save_img(tmp_path / "theirs.png", array)
    assert (tmp_path / "ours.png").read_bytes() == (tmp_path / "theirs.png").read_bytes()
    with pytest.warns(UserWarning, match="RGBA"):
        ember.keras.utils.save_img(tmp_path / "ours.jpg", array, file_format="jpeg")
    loaded = ember.keras.utils.load_img(io.BytesIO((tmp_path / "ours.png").read_bytes()), color_mode="rgba")
    np.testing.assert_array_equal(np.asarray(loaded), np.asarray(tf_keras.utils.array_to_img(array)))
    with pytest.raises(ValueError, match="rank 3"):
        ember.keras.utils.array_to_img(np.zeros((2, 2)))
    with pytest.raises(TypeError, match="path should be path-like"):
        ember.keras.utils.load_img(3)


def test_smart_resize_matches_tf_keras():
    image = RNG.uniform(0, 255, (2, 13, 29, 3)).astype(np.float32)
    for size in ((8, 8), (20, 5), (13, 29)):
        ours = ember.keras.preprocessing.image.smart_resize(image, size)
        theirs = tf_keras.preprocessing.image.smart_resize(image, size)
        assert isinstance(ours, np.ndarray)
        np.testing.assert_allclose(ours, theirs, rtol=0, atol=1e-3)
        np.testing.assert_allclose(ember.keras.preprocessing.image.smart_resize(image[0], size).shape,
                                   theirs[0].shape)
