"""tf.image.resize's methods beyond bilinear and nearest (python/ember/image.py; the ops in
src/ember/ops/image_scale_translate.cc and image_bicubic_area.cc) against TensorFlow 2.21: lanczos3, lanczos5,
gaussian, mitchellcubic, bicubic and area, antialiased or not, with preserve_aspect_ratio, their gradients, every
kernel of ScaleAndTranslate with translations, ResizeBicubic and ResizeArea in every coordinate convention,
image dtypes, ember.function with unknown sizes, GraphDefs TensorFlow runs, bad input, and tf.compat.v1.image's
resize functions and crop_and_resize."""
import numpy as np
import pytest
import tensorflow as tf

import ember as em

RNG = np.random.default_rng(41)
X = RNG.standard_normal((2, 9, 7, 3)).astype(np.float32)
METHODS = [("lanczos3", False), ("lanczos5", True), ("gaussian", False), ("mitchellcubic", True),
           ("bilinear", True), ("bicubic", True), ("lanczos3", True), ("gaussian", True), ("bicubic", False)]
KERNELS = ["lanczos1", "lanczos3", "lanczos5", "gaussian", "box", "triangle", "keyscubic", "mitchellcubic"]


def _same(ours, theirs, tol=2e-6):
    ours, theirs = np.asarray(ours), np.asarray(theirs)
    assert ours.dtype == theirs.dtype and ours.shape == theirs.shape
    np.testing.assert_allclose(ours.astype(np.float64), theirs.astype(np.float64), rtol=tol, atol=tol)


@pytest.mark.parametrize("method,antialias", METHODS)
@pytest.mark.parametrize("size", [[4, 3], [13, 17], [20, 5], [9, 7], [1, 1]])
@pytest.mark.parametrize("preserve_aspect_ratio", [False, True])
def test_resize_and_its_gradient_match_tensorflow(method, antialias, size, preserve_aspect_ratio):
    def run(m):
        x = m.constant(X)
        with m.GradientTape() as tape:
            tape.watch(x)
            y = m.image.resize(x, size, method, preserve_aspect_ratio=preserve_aspect_ratio, antialias=antialias)
            loss = m.reduce_sum(y * np.linspace(-1, 1, int(np.prod(y.shape)), dtype=np.float32).reshape(y.shape))
        return y, tape.gradient(loss, x)

    for ours, theirs in zip(run(em), run(tf)):
        _same(ours, theirs, tol=1e-5)


@pytest.mark.parametrize("kernel", KERNELS)
@pytest.mark.parametrize("antialias", [False, True])
def test_scale_and_translate_op_and_its_gradient_op_match_tensorflow(kernel, antialias):
    for size, translation in (([4, 3], [0.0, 0.0]), ([13, 17], [1.3, -0.7]), ([5, 11], [-2.5, 4.0])):
        scale = (np.array(size, np.float32) / np.array([9, 7], np.float32) * np.float32(1.1)).astype(np.float32)
        translation = np.array(translation, np.float32)
        ours = em._C.op("ScaleAndTranslate")(em.constant(X), em.constant(size), em.constant(scale),
                                             em.constant(translation), kernel, antialias)
        theirs = tf.raw_ops.ScaleAndTranslate(images=X, size=size, scale=scale, translation=translation,
                                              kernel_type=kernel, antialias=antialias)
        _same(ours, theirs)
        grads = RNG.standard_normal(theirs.shape).astype(np.float32)
        _same(em._C.op("ScaleAndTranslateGrad")(em.constant(grads), em.constant(X), em.constant(scale),
                                                em.constant(translation), kernel, antialias),
              tf.raw_ops.ScaleAndTranslateGrad(grads=grads, original_image=X, scale=scale, translation=translation,
                                               kernel_type=kernel, antialias=antialias))


def test_float64_gradient_is_the_adjoint_of_the_resampling():
    """TensorFlow's ScaleAndTranslateGrad takes float32 only; ember's also float64, whose result must satisfy
    <grad(g), x> == <g, resize(x)> for the linear resampling."""
    x = RNG.standard_normal((1, 8, 6, 2))
    xt = em.constant(x)
    with em.GradientTape() as tape:
        tape.watch(xt)
        y = em.image.resize(xt, [5, 11], "lanczos3", antialias=True)
        g = RNG.standard_normal(y.shape).astype(np.float32)
        loss = em.reduce_sum(y * g)
    dx = tape.gradient(loss, xt)
    assert dx.dtype == em.float64
    np.testing.assert_allclose(np.sum(dx.numpy() * x), np.sum(g * y.numpy()), rtol=1e-5)


@pytest.mark.parametrize("size", [[4, 3], [13, 17], [9, 7], [1, 1], [20, 2]])
@pytest.mark.parametrize("align_corners,half_pixel_centers", [(False, False), (True, False), (False, True)])
def test_bicubic_and_area_ops_match_tensorflow(size, align_corners, half_pixel_centers):
    ours = em._C.op("ResizeBicubic")(em.constant(X), em.constant(size), align_corners, half_pixel_centers)
    theirs = tf.raw_ops.ResizeBicubic(images=X, size=size, align_corners=align_corners,
                                      half_pixel_centers=half_pixel_centers)
    _same(ours, theirs)
    grads = RNG.standard_normal(theirs.shape).astype(np.float32)
    _same(em._C.op("ResizeBicubicGrad")(em.constant(grads), em.constant(X), align_corners, half_pixel_centers),
          tf.raw_ops.ResizeBicubicGrad(grads=grads, original_image=X, align_corners=align_corners,
                                       half_pixel_centers=half_pixel_centers))
    if not half_pixel_centers:
        _same(em._C.op("ResizeArea")(em.constant(X), em.constant(size), align_corners),
              tf.raw_ops.ResizeArea(images=X, size=size, align_corners=align_corners))


@pytest.mark.parametrize("antialias", [False, True])
def test_area_resize_matches_tensorflow_and_has_no_gradient_as_there(antialias):
    for size in ([4, 3], [13, 17], [6, 6]):
        _same(em.image.resize(X, size, "area", antialias=antialias), tf.image.resize(X, size, "area",
                                                                                      antialias=antialias))
    x = em.constant(X)
    with em.GradientTape() as tape:
        tape.watch(x)
        y = em.image.resize(x, [4, 3], "area")
    assert tape.gradient(y, x) is None


@pytest.mark.parametrize("dtype", [np.uint8, np.int32, np.float16, np.float64])
def test_resize_takes_other_image_dtypes_as_tensorflow(dtype):
    image = (X * 40 + 100).astype(dtype)
    for method in ("lanczos3", "mitchellcubic", "bicubic", "area"):
        _same(em.image.resize(image, [5, 12], method), tf.image.resize(image, [5, 12], method), tol=1e-3)


def test_resize_in_a_function_with_unknown_sizes():
    @em.function(input_signature=[em.TensorSpec([None, None, None, 3], em.float32), em.TensorSpec([2], em.int32)])
    def resized(images, size):
        return em.image.resize(images, size, "gaussian", preserve_aspect_ratio=True, antialias=True)

    _same(resized(X, np.array([6, 20], np.int32)),
          tf.image.resize(X, [6, 20], "gaussian", preserve_aspect_ratio=True, antialias=True), tol=1e-5)
    _same(em.image.resize(X[0], [4, 4], "lanczos5"), tf.image.resize(X[0], [4, 4], "lanczos5"), tol=1e-5)


@pytest.mark.parametrize("method,op", [("lanczos3", "ScaleAndTranslate"), ("bicubic", "ResizeBicubic"),
                                       ("area", "ResizeArea")])
def test_tensorflow_runs_an_ember_graph_of_the_resize(method, op):
    @em.function(input_signature=[em.TensorSpec([2, 9, 7, 3], em.float32)])
    def resized(images):
        return em.image.resize(images, [5, 4], method, antialias=method == "lanczos3")

    concrete = resized.get_concrete_function()
    graph_def = tf.compat.v1.GraphDef.FromString(concrete.graph.as_graph_def().SerializeToString())
    assert any(n.op == op for n in graph_def.node)
    wrapped = tf.compat.v1.wrap_function(lambda: tf.compat.v1.import_graph_def(graph_def, name=""), [])
    theirs = wrapped.prune(feeds=concrete.inputs[0].name, fetches=concrete.outputs[0].name)(tf.constant(X))
    _same(theirs, resized(X))


@pytest.mark.parametrize("fn,error,message", [
    (lambda: em._C.op("ScaleAndTranslate")(em.constant(X), em.constant([3, 3]), em.constant([1.0, 1.0]),
                                           em.constant([0.0, 0.0]), "cubic", True),
     em.errors.InvalidArgumentError, "ScaleAndTranslate: unrecognized kernel type \"cubic\""),
    (lambda: em._C.op("ScaleAndTranslate")(em.constant(X), em.constant([3, 3]), em.constant([0.0, 1.0]),
                                           em.constant([0.0, 0.0]), "box", True),
     em.errors.InvalidArgumentError, "ScaleAndTranslate: scale must be positive"),
    (lambda: em._C.op("ScaleAndTranslate")(em.constant(X), em.constant([3, 3]), em.constant([1.0, 1.0, 1.0]),
                                           em.constant([0.0, 0.0]), "box", True),
     em.errors.InvalidArgumentError, "ScaleAndTranslate: scale must be a vector of 2 elements"),
    (lambda: em._C.op("ScaleAndTranslate")(em.constant(X), em.constant([0, 3]), em.constant([1.0, 1.0]),
                                           em.constant([0.0, 0.0]), "box", True),
     em.errors.InvalidArgumentError, "ScaleAndTranslate: the output size must be positive"),
    (lambda: em._C.op("ScaleAndTranslate")(em.constant(X[0]), em.constant([3, 3]), em.constant([1.0, 1.0]),
                                           em.constant([0.0, 0.0]), "box", True),
     em.errors.InvalidArgumentError, "ScaleAndTranslate: images must be 4-D"),
    (lambda: em.image.resize(X, [3, 3], "cubic"), ValueError, "Resize method is not implemented: cubic"),
    (lambda: em._C.op("ResizeBicubic")(em.constant(X), em.constant([3, 3]), True, True),
     em.errors.InvalidArgumentError, "ResizeBicubic: align_corners and half_pixel_centers cannot both be true"),
    (lambda: em._C.op("ResizeArea")(em.constant(X), em.constant([3, 0]), False),
     em.errors.InvalidArgumentError, "ResizeArea: the output size must be positive"),
    (lambda: em._C.op("ResizeBicubicGrad")(em.zeros([2, 3, 3, 2]), em.constant(X), False, True),
     em.errors.InvalidArgumentError, "ResizeBicubicGrad: grads and original_image must have the same batch"),
])
def test_bad_input_raises_a_clear_error(fn, error, message):
    with pytest.raises(error, match=message):
        fn()


def test_tensorflow_refuses_an_unknown_kernel_too():
    with pytest.raises(tf.errors.InvalidArgumentError):
        tf.raw_ops.ScaleAndTranslate(images=X, size=[3, 3], scale=[1.0, 1.0], translation=[0.0, 0.0],
                                     kernel_type="cubic")
    with pytest.raises(ValueError, match="Resize method is not implemented: cubic"):
        tf.image.resize(X, [3, 3], "cubic")


@pytest.mark.parametrize("fn", ["resize_bicubic", "resize_bilinear", "resize_nearest_neighbor", "resize_area"])
@pytest.mark.parametrize("conventions", [{}, {"align_corners": True}, {"half_pixel_centers": True}])
@pytest.mark.parametrize("dtype", [np.float32, np.uint8])
def test_compat_v1_resize_functions_match_tensorflow(fn, conventions, dtype):
    if fn == "resize_area" and "half_pixel_centers" in conventions:
        return  # resize_area has no half_pixel_centers, in TensorFlow either
    image = (X * 40 + 100).astype(dtype)
    ours = getattr(em.compat.v1.image, fn)(image, [5, 11], **conventions)
    _same(ours, getattr(tf.compat.v1.image, fn)(image, [5, 11], **conventions))


def test_compat_v1_crop_and_resize_takes_box_ind():
    boxes = np.array([[0.1, 0.2, 0.8, 0.9], [0.5, 0.5, 0.2, 0.1]], np.float32)
    _same(em.compat.v1.image.crop_and_resize(X, boxes, [1, 0], [3, 4]),
          tf.compat.v1.image.crop_and_resize(X, boxes, [1, 0], [3, 4]))
    _same(em.compat.v1.image.crop_and_resize(X, boxes, crop_size=[3, 4], box_indices=[1, 0]),
          tf.compat.v1.image.crop_and_resize(X, boxes, crop_size=[3, 4], box_indices=[1, 0]))
    for m in (tf, em):
        with pytest.raises(ValueError, match="Cannot specify both 'box_ind' and 'box_indices'"):
            m.compat.v1.image.crop_and_resize(X, boxes, [1, 0], [3, 4], box_indices=[1, 0])
