"""ember.image's box operations (python/ember/ops/image_boxes_ops.py; ops in src/ember/ops/image_boxes.cc)
against TensorFlow 2.21: crop_and_resize in both methods with its gradients for image and boxes, the
non-max suppressions on random boxes with tied scores (TensorFlow's selection order), soft NMS, float16,
ember.function, GraphDefs TensorFlow imports, and bad input raising ember.errors naming the op."""
import numpy as np
import pytest
import tensorflow as tf

import ember as em

RNG = np.random.default_rng(23)
IMAGE = RNG.standard_normal((2, 5, 6, 3)).astype(np.float32)
BOXES = RNG.uniform(-0.2, 1.2, (7, 4)).astype(np.float32)  # some reach outside the image: extrapolation
BOX_INDICES = RNG.integers(0, 2, 7).astype(np.int32)


def _same(ours, theirs, tol=1e-6):
    ours, theirs = np.asarray(ours), np.asarray(theirs)
    assert ours.dtype == theirs.dtype and ours.shape == theirs.shape
    np.testing.assert_allclose(ours.astype(np.float64), theirs.astype(np.float64), rtol=tol, atol=tol)


def _crop(m, image, boxes, method, crop_size, extrapolation=0.0):
    return m.image.crop_and_resize(image, boxes, BOX_INDICES, crop_size, method=method,
                                   extrapolation_value=extrapolation)


@pytest.mark.parametrize("method", ["bilinear", "nearest"])
@pytest.mark.parametrize("crop_size", [[3, 4], [1, 1], [1, 5], [6, 1]])
def test_crop_and_resize_and_its_gradients_match_tensorflow(method, crop_size):
    upstream = RNG.standard_normal((7, *crop_size, 3)).astype(np.float32)

    def run(m):
        image, boxes = m.constant(IMAGE), m.constant(BOXES)
        with m.GradientTape(persistent=True) as tape:
            tape.watch([image, boxes])
            crops = _crop(m, image, boxes, method, crop_size, extrapolation=0.5)
            loss = m.reduce_sum(crops * upstream)
        return crops, tape.gradient(loss, image), tape.gradient(loss, boxes)

    for ours, theirs in zip(run(em), run(tf)):
        _same(ours, theirs, tol=2e-6)


@pytest.mark.parametrize("dtype", [np.float64, np.float16, np.uint8, np.int32])
def test_crop_and_resize_takes_tensorflows_image_dtypes(dtype):
    image = (IMAGE * 40 + 100).astype(dtype)
    ours = _crop(em, image, BOXES, "bilinear", [4, 3])
    _same(ours, _crop(tf, image, BOXES, "bilinear", [4, 3]), tol=1e-4)
    if dtype in (np.float64, np.float16):  # the image's gradient has the image's dtype
        x = em.constant(image)
        with em.GradientTape() as tape:
            tape.watch(x)
            y = _crop(em, x, BOXES, "bilinear", [4, 3])
        tx = tf.constant(image)
        with tf.GradientTape() as ttape:
            ttape.watch(tx)
            ty = _crop(tf, tx, BOXES, "bilinear", [4, 3])
        _same(tape.gradient(y, x), ttape.gradient(ty, tx), tol=1e-3)


def test_crop_and_resize_in_a_function_with_unknown_sizes():
    @em.function(input_signature=[em.TensorSpec([None, None, None, 3], em.float32), em.TensorSpec([None, 4], em.float32),
                                  em.TensorSpec([None], em.int32), em.TensorSpec([2], em.int32)])
    def crops(image, boxes, indices, size):
        return em.image.crop_and_resize(image, boxes, indices, size)

    _same(crops(IMAGE, BOXES, BOX_INDICES, np.array([3, 2], np.int32)),
          tf.image.crop_and_resize(IMAGE, BOXES, BOX_INDICES, [3, 2]))
    assert em.image.crop_and_resize(IMAGE, np.zeros((0, 4), np.float32), np.zeros(0, np.int32),
                                    [2, 2]).shape == (0, 2, 2, 3)


@pytest.mark.parametrize("fn,error,message", [
    (lambda m: m.image.crop_and_resize(IMAGE, BOXES, BOX_INDICES + 1, [2, 2]), "OutOfRangeError",
     "box_index has values outside"),
    (lambda m: m.image.crop_and_resize(IMAGE, BOXES[:, :3], BOX_INDICES, [2, 2]), "InvalidArgumentError",
     "boxes must have 4 columns"),
    (lambda m: m.image.crop_and_resize(IMAGE, BOXES, BOX_INDICES[:3], [2, 2]), "InvalidArgumentError",
     "box_ind has incompatible shape"),
    (lambda m: m.image.crop_and_resize(IMAGE, BOXES, BOX_INDICES, [0, 2]), "InvalidArgumentError",
     "crop dimensions must be positive"),
    (lambda m: m.image.crop_and_resize(IMAGE, BOXES, BOX_INDICES, [2, 2, 2]), "InvalidArgumentError",
     "crop_size must have two elements"),
    (lambda m: m.image.crop_and_resize(IMAGE[0], BOXES, BOX_INDICES, [2, 2]), "InvalidArgumentError",
     "image must be 4-D"),
    (lambda m: m.image.crop_and_resize(IMAGE, [[0.0, 0.0, np.nan, 1.0]], [0], [2, 2]), "InvalidArgumentError",
     "not finite"),
    (lambda m: m.image.crop_and_resize(IMAGE[:, :0], BOXES, BOX_INDICES, [2, 2]), "InvalidArgumentError",
     "image dimensions must be positive"),
    (lambda m: m.image.crop_and_resize(IMAGE, BOXES, BOX_INDICES, [2, 2], method="cubic"), "InvalidArgumentError",
     "bilinear"),
])
def test_crop_and_resize_bad_input_raises_as_tensorflow(fn, error, message):
    with pytest.raises(getattr(tf.errors, error)):
        fn(tf)
    with pytest.raises(getattr(em.errors, error), match=f"CropAndResize.*{message}"):
        fn(em)


def test_crop_and_resize_gradient_ops_check_their_operands():
    grads = em.zeros([7, 2, 2, 3])
    with pytest.raises(em.errors.OutOfRangeError, match="CropAndResizeGradImage: box_index has values outside"):
        em._C.op("CropAndResizeGradImage")(grads, BOXES, BOX_INDICES + 5, em.constant([2, 5, 6, 3]), em.float32,
                                           "bilinear")
    with pytest.raises(em.errors.InvalidArgumentError, match="CropAndResizeGradImage: image_size and grads"):
        em._C.op("CropAndResizeGradImage")(grads, BOXES, BOX_INDICES, em.constant([2, 5, 6, 4]), em.float32,
                                           "bilinear")
    with pytest.raises(em.errors.InvalidArgumentError, match="CropAndResizeGradBoxes: image, grads depth differ"):
        em._C.op("CropAndResizeGradBoxes")(em.zeros([7, 2, 2, 2]), IMAGE, BOXES, BOX_INDICES, "bilinear")
    with pytest.raises(em.errors.InvalidArgumentError, match="CropAndResizeGradBoxes: method must be \"bilinear\""):
        em._C.op("CropAndResizeGradBoxes")(grads, IMAGE, BOXES, BOX_INDICES, "nearest")


def _random_case(rng, tied):
    n = int(rng.integers(0, 30))
    boxes = rng.uniform(0, 1, (n, 4)).astype(np.float32)
    scores = (rng.choice([0.1, 0.3, 0.5, 0.9], n) if tied else rng.uniform(size=n)).astype(np.float32)
    return boxes, scores, int(rng.integers(0, 20)), float(rng.uniform()), float(rng.uniform(-0.1, 0.5))


def test_non_max_suppression_and_soft_nms_select_what_tensorflow_selects():
    """Random boxes, half of the cases with many tied scores (TensorFlow takes the lower index first), with and
    without a score threshold, hard and soft (Gaussian) suppression, float32 and float16."""
    rng = np.random.default_rng(3)
    for trial in range(120):
        boxes, scores, size, iou, score = _random_case(rng, tied=trial % 2 == 1)
        _same(em.image.non_max_suppression(boxes, scores, size, iou, score),
              tf.image.non_max_suppression(boxes, scores, size, iou, score), tol=0)
        sigma = float(rng.choice([0.0, 0.3, 1.0]))
        dtype = np.float16 if trial % 3 == 0 else np.float32
        args = (boxes.astype(dtype), scores.astype(dtype), size, dtype(iou), dtype(score), dtype(sigma))
        for ours, theirs in zip(em.image.non_max_suppression_with_scores(*args),
                                tf.image.non_max_suppression_with_scores(*args)):
            _same(ours, theirs, tol=0)
        overlaps = rng.uniform(size=(len(scores), len(scores))).astype(np.float32)
        _same(em.image.non_max_suppression_overlaps(overlaps, scores, size, iou, score),
              tf.image.non_max_suppression_overlaps(overlaps, scores, size, iou, score), tol=0)


def test_non_max_suppression_v4_pads_as_tensorflow():
    rng = np.random.default_rng(4)
    for _ in range(30):
        boxes, scores, size, iou, score = _random_case(rng, tied=True)
        for pad in (False, True):
            ours = em._C.op("NonMaxSuppressionV4")(em.constant(boxes), em.constant(scores), em.constant(size),
                                                   em.constant(iou), em.constant(score), pad)
            theirs = tf.raw_ops.NonMaxSuppressionV4(boxes=boxes, scores=scores, max_output_size=size,
                                                    iou_threshold=iou, score_threshold=score,
                                                    pad_to_max_output_size=pad)
            for o, t in zip(ours, theirs):
                _same(o, t, tol=0)


def test_non_max_suppression_padded_is_tensorflow_2s_tiled_algorithm():
    """TensorFlow 2's non_max_suppression_padded is not NonMaxSuppressionV4 (boxes under the score threshold are
    zeroed, boxes with no positive coordinate are never kept): ember's selects the same, single and batched,
    with small tiles (several tiles suppress each other) and TensorFlow's default."""
    rng = np.random.default_rng(5)
    for trial in range(60):
        boxes, scores, size, iou, score = _random_case(rng, tied=trial % 2 == 1)
        if len(scores) == 0:
            continue
        pad, tile = trial % 3 > 0, int(rng.choice([4, 512]))
        score = score if trial % 4 else float("-inf")
        ours = em.image.non_max_suppression_padded(boxes, scores, max(size, 1), iou, score,
                                                   pad_to_max_output_size=pad, tile_size=tile)
        theirs = tf.image.non_max_suppression_padded(tf.constant(boxes), tf.constant(scores), max(size, 1), iou,
                                                     score, pad_to_max_output_size=pad, tile_size=tile)
        for o, t in zip(ours, theirs):
            _same(o, t, tol=0)
    boxes = rng.uniform(0, 1, (2, 3, 9, 4)).astype(np.float32)
    scores = rng.uniform(size=(2, 3, 9)).astype(np.float32)
    theirs = tf.image.non_max_suppression_padded(tf.constant(boxes), tf.constant(scores), 5, 0.3,
                                                 pad_to_max_output_size=True, tile_size=4)
    traced = em.function(lambda b, s: em.image.non_max_suppression_padded(b, s, 5, 0.3, pad_to_max_output_size=True,
                                                                           tile_size=4))
    for ours in (em.image.non_max_suppression_padded(boxes, scores, 5, 0.3, pad_to_max_output_size=True,
                                                     tile_size=4), traced(boxes, scores)):
        for o, t in zip(ours, theirs):
            _same(o, t, tol=0)
    with pytest.raises(ValueError, match="must be True for batched input"):
        em.image.non_max_suppression_padded(boxes, scores, 5)


@pytest.mark.parametrize("pad_per_class", [False, True])
@pytest.mark.parametrize("clip_boxes", [False, True])
def test_combined_non_max_suppression_matches_tensorflow(pad_per_class, clip_boxes):
    rng = np.random.default_rng(6)
    for trial in range(25):
        n, classes = int(rng.integers(1, 20)), int(rng.integers(1, 4))
        q = 1 if trial % 2 else classes
        boxes = rng.uniform(-0.2, 1.2, (2, n, q, 4)).astype(np.float32)
        scores = rng.choice([0.1, 0.3, 0.5, 0.9], (2, n, classes)).astype(np.float32)
        args = (boxes, scores, int(rng.integers(1, 6)), int(rng.integers(1, 12)), float(rng.uniform()),
                float(rng.uniform(-0.1, 0.5)), pad_per_class, clip_boxes)
        for o, t in zip(em.image.combined_non_max_suppression(*args), tf.image.combined_non_max_suppression(*args)):
            _same(o, t, tol=0)


def test_suppression_runs_in_a_function_with_unknown_box_count():
    @em.function(input_signature=[em.TensorSpec([None, 4], em.float32), em.TensorSpec([None], em.float32),
                                  em.TensorSpec([], em.int32)])
    def keep(boxes, scores, size):
        return em.image.non_max_suppression_with_scores(boxes, scores, size, 0.4, soft_nms_sigma=0.5)

    boxes, scores, *_ = _random_case(np.random.default_rng(8), tied=False)
    for o, t in zip(keep(boxes, scores, np.int32(6)), tf.image.non_max_suppression_with_scores(
            boxes, scores, 6, 0.4, soft_nms_sigma=0.5)):
        _same(o, t, tol=0)


@pytest.mark.parametrize("fn,message", [
    (lambda m: m.image.non_max_suppression(BOXES, BOXES[:, 0], -1), "NonMaxSuppressionV3.*output size must be non-negative"),
    (lambda m: m.image.non_max_suppression(BOXES, BOXES[:, 0], 3, iou_threshold=1.5), "NonMaxSuppressionV3.*iou_threshold must be in \\[0, 1\\]"),
    (lambda m: m.image.non_max_suppression(BOXES, BOXES[:4, 0], 3), "NonMaxSuppressionV3.*scores has incompatible shape"),
    (lambda m: m.image.non_max_suppression(BOXES[:, :3], BOXES[:, 0], 3), "NonMaxSuppressionV3.*boxes must have 4 columns"),
    (lambda m: m.image.non_max_suppression(BOXES, BOXES[:, 0], [3]), "NonMaxSuppressionV3.*max_output_size must be 0-D"),
    (lambda m: m.image.non_max_suppression_with_scores(BOXES, BOXES[:, 0], 3, soft_nms_sigma=-1.0), "NonMaxSuppressionV5.*soft_nms_sigma must be >= 0"),
    (lambda m: m.image.non_max_suppression_overlaps(BOXES, BOXES[:, 0], 3), "NonMaxSuppressionWithOverlaps.*overlaps must be square"),
    (lambda m: m.image.combined_non_max_suppression(np.zeros((2, 5, 3, 4), np.float32), np.zeros((2, 5, 2), np.float32), 3, 4),
     "CombinedNonMaxSuppression.*third dimension of boxes must be either 1 or num classes"),
    (lambda m: m.image.combined_non_max_suppression(np.zeros((2, 5, 1, 4), np.float32), np.zeros((2, 5, 2), np.float32), 3, -4),
     "CombinedNonMaxSuppression.*max_total_size must be > 0"),
    (lambda m: m.image.combined_non_max_suppression(np.zeros((2, 5, 1, 4), np.float32), np.zeros((2, 4, 2), np.float32), 3, 4),
     "CombinedNonMaxSuppression.*scores has incompatible shape"),
    (lambda m: m.image.combined_non_max_suppression(np.zeros((2, 5, 1, 4), np.float32), np.zeros((2, 5, 2), np.float32), 0, 4),
     "CombinedNonMaxSuppression.*max_size_per_class must be positive"),
])
def test_suppression_bad_input_raises_invalid_argument(fn, message):
    with pytest.raises(tf.errors.InvalidArgumentError):
        fn(tf)
    with pytest.raises(em.errors.InvalidArgumentError, match=message):
        fn(em)


def _run_in_tensorflow(concrete, *args):
    gd = concrete.graph.as_graph_def()
    graph_def = tf.compat.v1.GraphDef.FromString(gd.SerializeToString())
    feeds = [f"{n.name}:0" for n in gd.node if n.op == "Placeholder"]
    fetches = [f"{n.name}:0" for n in gd.node if n.op in ("CropAndResize", "NonMaxSuppressionV3",
                                                              "NonMaxSuppressionV5", "CombinedNonMaxSuppression")]
    wrapped = tf.compat.v1.wrap_function(lambda: tf.compat.v1.import_graph_def(graph_def, name=""), [])
    return wrapped.prune(feeds=feeds, fetches=fetches)(*args)


def test_tensorflow_imports_and_runs_ember_graphs_of_the_box_ops():
    @em.function(input_signature=[em.TensorSpec([2, 5, 6, 3], em.float32), em.TensorSpec([7, 4], em.float32)])
    def crops(image, boxes):
        return em.image.crop_and_resize(image, boxes, BOX_INDICES, [3, 2], method="nearest", extrapolation_value=1.0)

    _same(_run_in_tensorflow(crops.get_concrete_function(), tf.constant(IMAGE), tf.constant(BOXES))[0],
          crops(IMAGE, BOXES))

    boxes, scores, *_ = _random_case(np.random.default_rng(9), tied=True)
    for dtype in (np.float32, np.float16):
        @em.function(input_signature=[em.TensorSpec([None, 4], dtype), em.TensorSpec([None], dtype)])
        def keep(b, s):
            return em.image.non_max_suppression(b, s, 5, 0.4, 0.2)

        _same(_run_in_tensorflow(keep.get_concrete_function(), tf.constant(boxes.astype(dtype)),
                                 tf.constant(scores.astype(dtype)))[0], keep(boxes.astype(dtype), scores.astype(dtype)), tol=0)

    @em.function(input_signature=[em.TensorSpec([2, None, 1, 4], em.float32), em.TensorSpec([2, None, 3], em.float32)])
    def combined(b, s):
        return em.image.combined_non_max_suppression(b, s, 3, 5, 0.4, 0.2, clip_boxes=False)

    b = np.random.default_rng(10).uniform(size=(2, 8, 1, 4)).astype(np.float32)
    s = np.random.default_rng(11).uniform(size=(2, 8, 3)).astype(np.float32)
    theirs = _run_in_tensorflow(combined.get_concrete_function(), tf.constant(b), tf.constant(s))
    assert len(theirs) == 1  # the op's node: its first output
    _same(theirs[0], combined(b, s)[0], tol=0)
