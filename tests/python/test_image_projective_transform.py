"""ImageProjectiveTransformV3 (src/ember/ops/image.cc, kernels/image.cc) against TensorFlow's kernel: every
fill mode and interpolation, each dtype TensorFlow registers, rotations, zooms, shears, translations and
projective rows, sample points on pixel centres and far outside, equal bit for bit; its shape function
(output_shape known, partly known or unknown while tracing), its errors and its gradient (TensorFlow's rule)."""
import ml_dtypes
import numpy as np
import pytest
import tensorflow as real_tf

import ember as tf

FILL_MODES = ["REFLECT", "WRAP", "CONSTANT", "NEAREST"]
INTERPOLATIONS = ["NEAREST", "BILINEAR"]
DTYPES = ["uint8", "int32", "int64", "float16", "bfloat16", "float32", "float64"]


def _rotation(angle, h, w):
    """tf_keras' RandomRotation row: rotates about the image centre."""
    cos, sin = np.cos(angle), np.sin(angle)
    x_offset = ((w - 1) - (cos * (w - 1) - sin * (h - 1))) / 2.0
    y_offset = ((h - 1) - (sin * (w - 1) + cos * (h - 1))) / 2.0
    return [cos, -sin, x_offset, sin, cos, y_offset, 0, 0]


def _transforms(h, w):
    return np.array([
        [1, 0, 0, 0, 1, 0, 0, 0],                 # identity
        [1, 0, 2.5, 0, 1, -1.25, 0, 0],           # translation by fractions of a pixel
        [1, 0, -17, 0, 1, 23, 0, 0],              # far outside: several periods of reflect and wrap
        _rotation(0.7, h, w),
        _rotation(-2.9, h, w),
        [1.6, 0, -3.1, 0, 0.45, 2.2, 0, 0],       # zoom in one axis, out in the other
        [1, 0.3, 0, -0.2, 1, 0, 0, 0],            # shear
        [1.1, 0.1, -1, 0.05, 0.9, 0.5, 0.02, -0.03],  # projective
        [1, 0, 0, 0, 1, 0, 1, 0],                 # k == 0 at x == -1 only: never on the grid, but k < 0 past it
        [1, 0, 0, 0, 1, 0, -0.25, 0],             # k == 0 at x == 4: the point at infinity
    ], np.float32)


def _images(dtype, shape, seed=0):
    rng = np.random.default_rng(seed)
    if dtype in ("uint8",):
        return rng.integers(0, 256, shape).astype(np.uint8)
    if dtype in ("int32", "int64"):
        return rng.integers(-1000, 1000, shape).astype(dtype)
    values = rng.normal(size=shape) * 10
    return values.astype(ml_dtypes.bfloat16 if dtype == "bfloat16" else dtype)


def _both(images, transforms, output_shape, fill_value, interpolation, fill_mode):
    kwargs = dict(output_shape=np.asarray(output_shape, np.int32), fill_value=np.float32(fill_value),
                  interpolation=interpolation, fill_mode=fill_mode)
    want = real_tf.raw_ops.ImageProjectiveTransformV3(images=images, transforms=transforms, **kwargs).numpy()
    got = tf.raw_ops.ImageProjectiveTransformV3(images=tf.constant(images), transforms=tf.constant(transforms),
                                                **kwargs).numpy()
    return got, want


@pytest.mark.parametrize("fill_mode", FILL_MODES)
@pytest.mark.parametrize("interpolation", INTERPOLATIONS)
@pytest.mark.parametrize("dtype", DTYPES)
def test_equals_tensorflow_bit_for_bit(dtype, interpolation, fill_mode):
    h, w = 7, 9
    transforms = _transforms(h, w)
    images = _images(dtype, (len(transforms), h, w, 2))
    for output_shape in ([h, w], [5, 12]):
        got, want = _both(images, transforms, output_shape, -1.75 if dtype != "uint8" else 3.5, interpolation,
                          fill_mode)
        assert got.dtype == want.dtype and got.shape == want.shape
        np.testing.assert_array_equal(got.view(np.uint8), want.view(np.uint8))


@pytest.mark.parametrize("fill_mode", FILL_MODES)
def test_one_transform_for_the_batch_and_tiny_images(fill_mode):
    for h, w in ((1, 1), (1, 5), (4, 1), (2, 3)):
        images = _images("float32", (3, h, w, 1), seed=h * 10 + w)
        for row in _transforms(h, w):
            for interpolation in INTERPOLATIONS:
                got, want = _both(images, row[None], [h + 1, w + 2], 0.5, interpolation, fill_mode)
                np.testing.assert_array_equal(got, want)


@pytest.mark.parametrize("fill_mode", FILL_MODES)
def test_empty_images(fill_mode):
    row = np.array([[1, 0, 0.5, 0, 1, 0.5, 0, 0]], np.float32)
    for shape in ((1, 0, 3, 1), (0, 3, 3, 1), (1, 3, 0, 2)):
        got, want = _both(np.zeros(shape, np.float32), row, [2, 2], 4.0, "BILINEAR", fill_mode)
        np.testing.assert_array_equal(got, want)


def test_uint8_fill_values_convert_as_tensorflow():
    images = _images("uint8", (1, 4, 5, 1))
    row = np.array([[1, 0, 0.5, 0, 1, -0.5, 0, 0]], np.float32)
    for fill in (-1.7, 300.0, 0.5, 255.0):
        got, want = _both(images, row, [4, 5], fill, "BILINEAR", "CONSTANT")
        np.testing.assert_array_equal(got, want)


def test_shape_function_while_tracing():
    row = tf.constant([[1, 0, 0, 0, 1, 0, 0, 0]], tf.float32)

    @tf.function
    def warp(images, size):
        out = tf.raw_ops.ImageProjectiveTransformV3(images=images, transforms=row, output_shape=size,
                                                    fill_value=0.0, interpolation="BILINEAR")
        assert out.shape.as_list() == [None, None, None, 3]
        fixed = tf.raw_ops.ImageProjectiveTransformV3(images=images, transforms=row, output_shape=[6, 2],
                                                      fill_value=0.0, interpolation="BILINEAR")
        assert fixed.shape.as_list() == [None, 6, 2, 3]
        partly = tf.raw_ops.ImageProjectiveTransformV3(images=images, transforms=row,
                                                       output_shape=tf.stack([size[0], 4]), fill_value=0.0,
                                                       interpolation="NEAREST")
        assert partly.shape.as_list() == [None, None, 4, 3]
        return out

    images = np.arange(2 * 3 * 4 * 3, dtype=np.float32).reshape(2, 3, 4, 3)
    spec = tf.TensorSpec([None, None, None, 3], tf.float32)
    concrete = warp.get_concrete_function(spec, tf.TensorSpec([2], tf.int32))
    np.testing.assert_array_equal(concrete(tf.constant(images), tf.constant([3, 4], tf.int32)).numpy(), images)


@pytest.mark.parametrize("change, message", [
    (dict(output_shape=[0, 3]), "output dimensions must be positive"),
    (dict(output_shape=[1, 2, 3]), "output_shape must have 2 elements"),
    (dict(transforms=np.zeros([3, 8], np.float32)), "transforms must be [num_images, 8] or [1, 8]"),
    (dict(transforms=np.zeros([2, 7], np.float32)), "transforms must be [num_images, 8] or [1, 8]"),
    (dict(images=np.zeros([4, 5, 1], np.float32)), "must be 4-D"),
    (dict(fill_value=[1.0]), "fill_value must be a scalar"),
    (dict(fill_mode="FOO"), "fill_mode must be REFLECT, WRAP, CONSTANT or NEAREST, got 'FOO'"),
    (dict(interpolation="CUBIC"), "interpolation must be NEAREST or BILINEAR, got 'CUBIC'"),
])
def test_bad_operands_raise(change, message):
    args = dict(images=np.zeros([2, 4, 5, 1], np.float32), transforms=np.ones([1, 8], np.float32),
                output_shape=[4, 5], fill_value=0.0, interpolation="BILINEAR", fill_mode="REFLECT")
    args.update(change)
    with pytest.raises(tf.errors.InvalidArgumentError, match=message.replace("[", r"\[").replace("]", r"\]")):
        tf.raw_ops.ImageProjectiveTransformV3(**args)


def test_int8_images_are_refused_as_tensorflow_does():
    with pytest.raises((TypeError, tf.errors.InvalidArgumentError), match="ImageProjectiveTransformV3"):
        tf.raw_ops.ImageProjectiveTransformV3(images=np.zeros([1, 2, 2, 1], np.int8), transforms=np.ones([1, 8],
                                              np.float32), output_shape=[2, 2], fill_value=0.0,
                                              interpolation="NEAREST")


@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("interpolation", INTERPOLATIONS)
def test_gradient_is_tensorflows_rule(interpolation, dtype):
    h, w = 6, 7
    transforms = np.array([_rotation(0.4, h, w), [1.2, 0.1, -0.5, 0.0, 0.9, 0.3, 0.01, 0.0]], np.float32)
    images = _images(dtype, (2, h, w, 2))
    upstream = _images(dtype, (2, 5, 8, 2), seed=1)
    kwargs = dict(output_shape=[5, 8], fill_value=0.0, interpolation=interpolation, fill_mode="REFLECT")
    x = real_tf.constant(images)
    with real_tf.GradientTape() as tape:
        tape.watch(x)
        y = real_tf.raw_ops.ImageProjectiveTransformV3(images=x, transforms=transforms, **kwargs)
    want = tape.gradient(y, x, output_gradients=upstream).numpy()
    ex = tf.constant(images)
    with tf.GradientTape() as tape:
        tape.watch(ex)
        ey = tf.raw_ops.ImageProjectiveTransformV3(images=ex, transforms=tf.constant(transforms), **kwargs)
    got = tape.gradient(ey, ex, output_gradients=tf.constant(upstream)).numpy()
    # TensorFlow's rule samples at the inverse transform, which it inverts in float32 with the platform's
    # linear algebra: a sample landing within rounding of a pixel edge may take the neighbour's weight on
    # one CPU and not another (one element of 168 by 3e-5 on an AMD EPYC).
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-4)


def _warp_program(m, raw_ops):
    """A rotation by a computed row, to the input's own size read in the graph."""
    def program(images):
        row = m.reshape(m.stack([0.8, -0.6, 2.0, 0.6, 0.8, -1.0, 0.0, 0.0]), [1, 8])
        return raw_ops.ImageProjectiveTransformV3(images=images, transforms=row, output_shape=m.shape(images)[1:3],
                                                  fill_value=1.5, interpolation="BILINEAR", fill_mode="WRAP")
    return program


def test_graph_defs_cross_both_ways():
    from test_graph_def_tf import run_in_tensorflow

    images = _images("float32", (2, 5, 6, 3))
    ours = tf.function(_warp_program(tf, tf.raw_ops), input_signature=[tf.TensorSpec([None, None, None, 3])])
    graph = ours.get_concrete_function().graph
    got = run_in_tensorflow(graph.as_graph_def().SerializeToString(), [t.name for t in graph.inputs],
                            [t.name for t in graph.outputs], images)
    np.testing.assert_array_equal(got[0].numpy(), ours(images).numpy())
    theirs = real_tf.function(_warp_program(real_tf, real_tf.raw_ops),
                              input_signature=[real_tf.TensorSpec([None, None, None, 3])])
    concrete = theirs.get_concrete_function()
    imported = tf.graph_util.import_graph_def(concrete.graph.as_graph_def())
    run = tf.NewGraphFunction(imported, [concrete.inputs[0].name], [t.name for t in concrete.outputs])
    np.testing.assert_array_equal(run(images).numpy(), theirs(images).numpy())
