"""The registry tables' rows for the convolution and pooling ops (src/ember/ops/nn_conv.cc, nn_pool.cc; also the
normalization, image and LSTM ops of nn_norm.cc, image*.cc and nn_rnn.cc), kept
here so the shared tables (test_op_registry.py, test_registry_vs_tensorflow.py) gain one line each:
EXAMPLES (one valid call per op), VARIANTS (attributes and shapes the example does not reach, compared with
TensorFlow value and gradient), ERROR_CASES (bad operands both frameworks reject at run time) and EXCLUDED."""
import numpy as np

import ember as em

_rng = np.random.default_rng(17)


def _f(*shape):
    """Distinct float32 values (no ties for max pooling, no kinks for finite differences)."""
    size = int(np.prod(shape))
    return em.constant((_rng.permutation(size).reshape(shape) / size - 0.5).astype(np.float32))


def _i(v):
    return em.constant(v, em.int32)


def _conv2d_attrs(strides=(1, 1, 1, 1), padding="SAME", explicit=(), fmt="NHWC", dilations=(1, 1, 1, 1)):
    return [list(strides), True, padding, list(explicit), fmt, list(dilations)]


def examples():
    """op name -> (inputs, attrs)."""
    t = {}
    x, w = _f(2, 5, 6, 3), _f(3, 2, 3, 4)
    a = _conv2d_attrs(strides=(1, 2, 1, 1))
    t["Conv2D"] = ([x, w], a)
    t["_FusedConv2D"] = ([x, w, [_f(4)]], a + ["Relu", 0.2])
    t["Conv2DBackpropInput"] = ([_i([2, 5, 6, 3]), w, _f(2, 3, 6, 4)], a)
    t["Conv2DBackpropFilter"] = ([x, _i([3, 2, 3, 4]), _f(2, 3, 6, 4)], a)
    x3, w3 = _f(1, 4, 5, 3, 2), _f(2, 3, 2, 2, 3)
    a3 = [[1, 1, 2, 1, 1], "VALID", "NDHWC", [1] * 5]
    t["Conv3D"] = ([x3, w3], a3)
    t["Conv3DBackpropInputV2"] = ([_i([1, 4, 5, 3, 2]), w3, _f(1, 3, 2, 2, 3)], a3)
    t["Conv3DBackpropFilterV2"] = ([x3, _i([2, 3, 2, 2, 3]), _f(1, 3, 2, 2, 3)], a3)
    t["_FusedConv3D"] = ([x3, w3, [_f(3), _f(1, 3, 2, 2, 3)]], a3 + ["Relu", 0.2])
    dw = _f(3, 3, 3, 2)
    ad = [[1, 1, 1, 1], "SAME", [], "NHWC", [1, 1, 1, 1]]
    t["DepthwiseConv2dNative"] = ([x, dw], ad)
    t["_FusedDepthwiseConv2dNative"] = ([x, dw, [_f(6)]], ad + ["Tanh", 0.2])
    t["DepthwiseConv2dNativeBackpropInput"] = ([_i([2, 5, 6, 3]), dw, _f(2, 5, 6, 6)], ad)
    t["DepthwiseConv2dNativeBackpropFilter"] = ([x, _i([3, 3, 3, 2]), _f(2, 5, 6, 6)], ad)
    mp = [[1, 3, 2, 1], [1, 2, 2, 1], "SAME", [], "NHWC"]
    y = em._C.op("MaxPool")(x, *mp)
    t["MaxPool"] = ([x], mp)
    t["MaxPoolGrad"] = ([x, y, _f(2, 3, 3, 3)], mp)
    t["MaxPoolGradGrad"] = ([x, y, _f(2, 5, 6, 3)], mp[:3] + mp[4:])
    ap = [[1, 3, 2, 1], [1, 2, 2, 1], "VALID", "NHWC"]
    t["AvgPool"] = ([x], ap)
    t["AvgPoolGrad"] = ([_i([2, 5, 6, 3]), _f(2, 2, 3, 3)], ap)
    mp3 = [[1, 2, 2, 2, 1], [1, 2, 2, 1, 1], "SAME", "NDHWC"]
    y3 = em._C.op("MaxPool3D")(x3, *mp3)
    t["MaxPool3D"] = ([x3], mp3)
    t["MaxPool3DGrad"] = ([x3, y3, _f(1, 2, 3, 3, 2)], mp3)
    t["MaxPool3DGradGrad"] = ([x3, y3, _f(1, 4, 5, 3, 2)], mp3)
    ap3 = [[1, 2, 2, 2, 1], [1, 1, 2, 1, 1], "VALID", "NDHWC"]
    t["AvgPool3D"] = ([x3], ap3)
    t["AvgPool3DGrad"] = ([_i([1, 4, 5, 3, 2]), _f(1, 3, 2, 2, 2)], ap3)
    c = 5
    stats = [_f(c), _f(c), _f(c), em.constant(np.linspace(0.5, 1.5, c).astype(np.float32))]
    t["FusedBatchNormV3"] = ([x5 := _f(2, 3, 4, c), *stats], [0.001, 1.0, "NHWC", True])
    t["FusedBatchNormGradV3"] = ([_f(2, 3, 4, c), x5, stats[0], stats[2], stats[3], em.constant([], em.float32)],
                                 [0.001, "NHWC", True])
    t["_FusedBatchNormEx"] = ([x5, *stats], [0.001, 1.0, "NHWC", True, "Relu"])
    t["_FusedBatchNormGradEx"] = ([_f(2, 3, 4, c), x5, stats[0], stats[2], stats[3], em.constant([], em.float32),
                                   _f(2, 3, 4, c)], [0.001, "NHWC", True, "Relu"])
    t["LRN"] = ([x5], [2, 1.5, 0.3, 0.7])
    t["LRNGrad"] = ([_f(2, 3, 4, c), x5, em._C.op("LRN")(x5, 2, 1.5, 0.3, 0.7)], [2, 1.5, 0.3, 0.7])
    image = _f(2, 5, 7, 3)
    t["ResizeBilinear"] = ([image, _i([9, 4])], [False, True])
    t["ResizeBilinearGrad"] = ([_f(2, 9, 4, 3), image], [False, True])
    t["ResizeNearestNeighbor"] = ([image, _i([9, 4])], [False, True])
    t["ResizeNearestNeighborGrad"] = ([_f(2, 9, 4, 3), _i([5, 7])], [False, True])
    warp = em.constant([[0.9, -0.2, 0.7, 0.15, 1.1, -0.4, 0.01, -0.02]], em.float32)
    t["ImageProjectiveTransformV3"] = ([image, warp, _i([4, 6]), em.constant(0.25)], ["BILINEAR", "REFLECT"])
    # The box ops (src/ember/ops/image_boxes.cc); test_image_boxes.py compares them with TensorFlow further.
    boxes, box_ind = em.constant(np.array([[0.1, 0.2, 0.8, 0.7], [0.6, -0.1, 0.2, 1.1], [0.3, 0.3, 0.45, 0.9]],
                                          np.float32)), _i([1, 0, 1])
    t["CropAndResize"] = ([image, boxes, box_ind, _i([3, 4])], ["bilinear", 0.5])
    t["CropAndResizeGradImage"] = ([_f(3, 3, 4, 3), boxes, box_ind, _i([2, 5, 7, 3])], [em.float32, "bilinear"])
    t["CropAndResizeGradBoxes"] = ([_f(3, 3, 4, 3), image, boxes, box_ind], ["bilinear"])
    nms_boxes, scores = _f(6, 4), _f(6)
    t["NonMaxSuppressionV3"] = ([nms_boxes, scores, _i(4), em.constant(0.3), em.constant(-0.2)], [])
    t["NonMaxSuppressionV4"] = ([nms_boxes, scores, _i(4), em.constant(0.3), em.constant(-0.2)], [True])
    t["NonMaxSuppressionV5"] = ([nms_boxes, scores, _i(4), em.constant(0.3), em.constant(-0.2), em.constant(0.5)],
                                [True])
    t["NonMaxSuppressionWithOverlaps"] = ([_f(6, 6), scores, _i(4), em.constant(0.3), em.constant(-0.2)], [])
    t["CombinedNonMaxSuppression"] = ([_f(2, 6, 1, 4), _f(2, 6, 3), _i(2), _i(5), em.constant(0.3),
                                       em.constant(-0.2)], [False, True])
    t["ResizeBicubic"] = ([image, _i([9, 4])], [False, True])
    t["ResizeBicubicGrad"] = ([_f(2, 9, 4, 3), image], [False, True])
    t["ResizeArea"] = ([image, _i([3, 4])], [False])
    scale, shift = em.constant([1.8, 0.6]), em.constant([0.5, -0.25])
    t["ScaleAndTranslate"] = ([image, _i([9, 4]), scale, shift], ["lanczos3", True])
    t["ScaleAndTranslateGrad"] = ([_f(2, 9, 4, 3), image, scale, shift], ["keyscubic", False])
    # The whole-sequence LSTM ops (src/ember/ops/nn_rnn.cc); test_nn_rnn.py compares them with TensorFlow further.
    steps, batch, features, cell = 3, 2, 4, 5
    lstm = [em.constant(np.int64(steps)), _f(steps, batch, features), _f(batch, cell), _f(batch, cell),
            _f(features + cell, 4 * cell), _f(cell), _f(cell), _f(cell), _f(4 * cell)]
    t["BlockLSTMV2"] = (lstm, [0.0, True])
    t["BlockLSTMGradV2"] = (lstm + list(em._C.op("BlockLSTMV2")(*lstm, 0.0, True))
                            + [_f(steps, batch, cell), _f(steps, batch, cell)], [True])
    return t


# Where the tables draw random values (test_registry_vs_tensorflow.py's DOMAINS): variances are positive.
DOMAINS = {"FusedBatchNormV3": {4: (0.5, 2.0)}, "FusedBatchNormGradV3": {4: (0.5, 2.0)},
           "ImageProjectiveTransformV3": {1: (-0.4, 0.4)}}  # small projective terms: no point near infinity
# Inputs that stay float32 when the op runs in float16 or bfloat16 (test_registry_vs_tensorflow.py's draws): the
# batch-norm ops' scale, offset and statistics, TensorFlow's U.
FLOAT32_FOR_16BIT = {"FusedBatchNormV3": {1, 2, 3, 4}, "FusedBatchNormGradV3": {2, 3, 4, 5},
                     "ResizeBicubicGrad": {0}}  # its grads (ResizeBicubic's output is float32)
# Inputs that are float32 whatever the dtype the op runs in: ImageProjectiveTransformV3's transforms and
# fill_value.
ALWAYS_FLOAT32 = {"ImageProjectiveTransformV3": {1, 3}}

# Left out of test_gradient_check.py's finite differences, and why (checked in test_nn_conv.py instead).
NOT_FINITE_DIFFERENCE_CHECKED = {
    **{name: "its scale and translation are float32 only, as TensorFlow's, so the float64 check cannot run it; "
             "compared with TensorFlow's gradients and checked as the adjoint of ScaleAndTranslate in "
             "test_image_resize_methods.py" for name in ("ScaleAndTranslate", "ScaleAndTranslateGrad")},
    "CropAndResize": "its boxes are float32 only, as TensorFlow's, so the float64 check cannot run it; its "
                     "gradients for the image (float16, float32, float64) and the boxes are compared with "
                     "TensorFlow's in test_image_boxes.py",
    "FusedBatchNormV3": "as TensorFlow's, its gradient flows from y alone (the statistics outputs and, for "
                        "inference, the mean and variance inputs get none); test_nn_conv.py checks y's gradient "
                        "against finite differences",
    "FusedBatchNormGradV3": "in training its gradient, as TensorFlow's, treats the saved mean and variance as x's "
                            "own statistics (recomputed from x), which the table's random reserve spaces are not; "
                            "test_nn_norm.py checks it against finite differences of a whole first-order gradient, "
                            "and test_registry_vs_tensorflow.py against TensorFlow on this table",
    "BlockLSTMV2": "float32 only (TensorFlow's kernels take half and float32), so the float64 check cannot run it; "
                   "test_nn_rnn.py checks its gradient against float32 finite differences, eagerly and traced",
    "ImageProjectiveTransformV3": "its gradient is TensorFlow's rule, the upstream gradient warped back by the inverse "
                                  "transform, which is not the warp's exact adjoint; compared with TensorFlow's in "
                                  "test_image_projective_transform.py and test_registry_vs_tensorflow.py",
}

_GRAD_GRAD = ("its orig_output must be max_pool(orig_input) (TensorFlow's kernel matches input elements against "
              "it), which the table's random data are not; compared with TensorFlow in test_nn_conv.py")
EXCLUDED = {"MaxPoolGradGrad": _GRAD_GRAD, "MaxPool3DGradGrad": _GRAD_GRAD,
            **{name: "ember-internal: written by ember's conv fusion (its attributes are not TensorFlow's "
                     f"{name}'s); compared with the unfused graph in test_fuse_conv.py"
               for name in ("_FusedConv2D", "_FusedConv3D", "_FusedDepthwiseConv2dNative")},
            **{name: "float32 boxes, scores, thresholds, scales and translations (which the table's draws would cast to "
                     "the op's dtype), thresholds in [0, 1] and positive scales (which they would leave): compared "
                     "with TensorFlow in test_image_boxes.py and test_image_resize_methods.py"
               for name in ("ScaleAndTranslate", "ScaleAndTranslateGrad", "CropAndResize", "CropAndResizeGradImage",
                            "CropAndResizeGradBoxes", "NonMaxSuppressionV3", "NonMaxSuppressionV4", "NonMaxSuppressionV5", "NonMaxSuppressionWithOverlaps",
                            "CombinedNonMaxSuppression")},
            **{name: "ember-internal: written by ember's batch-norm fusion (TensorFlow's op of this name has side "
                     "inputs ember's lacks); compared with the unfused graph and TensorFlow in test_fuse_batch_norm.py"
               for name in ("_FusedBatchNormEx", "_FusedBatchNormGradEx")}}

_NO_FLOAT64 = ("TensorFlow's CPU kernels of 3-D pooling, fused batch norm and LRN take half, bfloat16 and float32 only; ember's float64 is "
               "checked against finite differences (test_gradient_check.py) and float32 (test_nn_conv.py)")
# (test, op, dtype) -> reason: strict xfails of test_registry_vs_tensorflow.py (its EXPECTED_DIFFERENCES).
EXPECTED_DIFFERENCES = {
    (test, name, "float64"): _NO_FLOAT64
    for test in ("test_values_match_tensorflow", "test_gradients_match_tensorflow",
                 "test_second_order_gradients_match_tensorflow")
    for name in ("MaxPool3D", "MaxPool3DGrad", "AvgPool3D", "AvgPool3DGrad", "FusedBatchNormV3",
                 "FusedBatchNormGradV3", "LRN", "LRNGrad")}
_LSTM_NO_FLOAT64 = "TensorFlow's BlockLSTMV2 kernels take half and float32 only, ember's float32 only (both reject float64)"
EXPECTED_DIFFERENCES.update({
    **{("test_values_match_tensorflow", name, "float64"): _LSTM_NO_FLOAT64
       for name in ("BlockLSTMV2", "BlockLSTMGradV2")},
    **{(test, "BlockLSTMV2", "float64"): _LSTM_NO_FLOAT64
       for test in ("test_gradients_match_tensorflow", "test_second_order_gradients_match_tensorflow")},
    ("test_gradients_match_tensorflow", "BlockLSTMV2", "float32"):
        "TensorFlow 2.21 registers BlockLSTM's gradient (BlockLSTMGrad, gate layout i, c, f, o) for BlockLSTMV2 "
        "(i, f, c, o), so its gradient is wrong (d sum(h * w) / dx: TensorFlow's tape -0.256, finite differences of "
        "TensorFlow's own forward 0.2367, ember 0.2367); ember's rule calls BlockLSTMGradV2, whose values match "
        "TensorFlow's (test_values_match_tensorflow, test_nn_rnn.py)",
})
_MATCHES_OUTPUT = ("TensorFlow's MaxPool3DGrad and MaxPoolGradGrad kernels find each window's maximum by matching "
                   "orig_input against orig_output, which the table's random orig_output does not hold (ember's "
                   "recompute it from orig_input); compared with a consistent orig_output in test_nn_conv.py")
EXPECTED_DIFFERENCES.update({
    ("test_values_match_tensorflow", "MaxPool3DGrad", "float32"): _MATCHES_OUTPUT,
    ("test_gradients_match_tensorflow", "MaxPool3DGrad", "float32"): _MATCHES_OUTPUT,
    ("test_gradients_match_tensorflow", "MaxPoolGrad", "float32"): _MATCHES_OUTPUT,
    ("test_gradients_match_tensorflow", "MaxPoolGrad", "float64"): _MATCHES_OUTPUT,
    ("test_values_match_tensorflow", "ResizeBilinearGrad", "float64"):
        "TensorFlow's ResizeBilinearGrad takes float32 grads only; ember's takes float64 too (so float64 images "
        "are differentiable twice)",
    **{(test, "ResizeBilinearGrad", dtype): "TensorFlow passes no gradient through ResizeBilinearGrad (zeros); "
       "ember's is its transpose, ResizeBilinear, checked by finite differences in test_gradient_check.py"
       for test, dtype in (("test_gradients_match_tensorflow", "float32"), ("test_gradients_match_tensorflow", "float64"),
                           ("test_second_order_gradients_match_tensorflow", "float64"))},
    **{(test, "ResizeNearestNeighborGrad", dtype): "TensorFlow registers no gradient for ResizeNearestNeighborGrad "
       "(LookupError); ember's is its transpose, ResizeNearestNeighbor, checked by finite differences"
       for test, dtype in (("test_gradients_match_tensorflow", "float32"), ("test_gradients_match_tensorflow", "float64"),
                           ("test_second_order_gradients_match_tensorflow", "float64"))},
    ("test_gradients_match_tensorflow", "ImageProjectiveTransformV3", "float64"):
        "the gradient warps back through the inverse transforms, float32 whatever the images' dtype, and ember's "
        "float32 MatrixInverse may round an inverse differently from TensorFlow's by an ulp: float64 gradients "
        "agree to 1e-5 (test_image_projective_transform.py), not this table's 1e-12",
    ("test_values_match_tensorflow", "ResizeBicubicGrad", "float64"):
        "TensorFlow's ResizeBicubicGrad takes float32 grads only; ember's takes float64 too (so float64 images "
        "are differentiable twice)",
    ("test_second_order_gradients_match_tensorflow", "ResizeBicubic", "float64"):
        "TensorFlow's second-order gradient needs ResizeBicubicGrad of float64 grads, which it lacks",
    **{(test, "ResizeBicubicGrad", dtype): "TensorFlow registers no gradient for ResizeBicubicGrad; ember's is "
       "its transpose, ResizeBicubic, checked by finite differences in test_gradient_check.py"
       for test, dtype in (("test_gradients_match_tensorflow", "float32"), ("test_gradients_match_tensorflow", "float64"),
                           ("test_second_order_gradients_match_tensorflow", "float64"))},
    ("test_values_match_tensorflow", "LRNGrad", "float32"):
        "TensorFlow's LRNGrad reads the normaliser from output_image, which the table's random data do not make "
        "LRN(input_image); ember's recomputes it from input_image. test_nn_conv.py compares tf.nn.lrn's gradient",
})


def variants(f):
    """op -> list of (inputs, attrs); `f(*shape)` makes a float32 operand. NHWC only: TensorFlow's CPU kernels
    run NCHW, dilated backprops and 3-D pooling in float32 only, grouped backprops not at all
    (test_nn_conv.py covers those against transposed and finite-difference references)."""
    t = {}
    t["Conv2D"] = [([f(2, 7, 9, 4), f(3, 2, 4, 6)], _conv2d_attrs(strides=(1, 2, 3, 1), padding="VALID")),
                   ([f(1, 6, 5, 2), f(2, 3, 2, 3)], _conv2d_attrs(padding="EXPLICIT",
                                                                    explicit=(0, 0, 1, 2, 3, 0, 0, 0))),
                   ([f(1, 1, 1, 1), f(1, 1, 1, 1)], _conv2d_attrs(padding="VALID"))]
    t["DepthwiseConv2dNative"] = [([f(2, 7, 6, 3), f(2, 3, 3, 1)], [[1, 2, 2, 1], "VALID", [], "NHWC", [1] * 4])]
    t["Conv3D"] = [([f(2, 3, 4, 5, 2), f(3, 2, 2, 2, 4)], [[1, 1, 1, 2, 1], "SAME", "NDHWC", [1] * 5])]
    t["MaxPool"] = [([f(2, 7, 6, 2)], [[1, 2, 3, 1], [1, 3, 1, 1], "VALID", [], "NHWC"]),
                    ([f(1, 5, 5, 2)], [[1, 3, 3, 1], [1, 2, 2, 1], "EXPLICIT", [0, 0, 1, 1, 2, 0, 0, 0], "NHWC"])]
    t["AvgPool"] = [([f(2, 7, 6, 2)], [[1, 3, 3, 1], [1, 2, 2, 1], "SAME", "NHWC"])]
    for name in ("ResizeBilinear", "ResizeNearestNeighbor"):
        t[name] = [([f(1, 4, 6, 2), _i([7, 3])], [align, half]) for align, half in ((False, False), (True, False))]
    return t


def _ones(*shape):
    return np.ones(shape, np.float32)


def _int(v):
    return np.array(v, np.int32)


# TensorFlow 2.21 aborts the process on a Conv2D input that is not 4-D and on a MaxPool window larger than
# its input (SIGFPE), and raises an InternalError from its oneDNN kernel on a mismatched out_backprop: those
# are checked against ember alone in test_nn_conv.py.
ERROR_CASES = [
    ("Conv2D", [_ones(1, 4, 4, 3), _ones(2, 2, 2, 1)], _conv2d_attrs()),  # 3 channels, filter in_channels 2
    ("AvgPool", [_ones(2, 2, 1)], [[1, 1, 1, 1], [1, 1, 1, 1], "VALID", "NHWC"]),  # not 4-D
    ("ResizeBilinear", [_ones(1, 2, 2, 1), _int([0, 2])], [False, False]),  # empty output size
    ("ResizeNearestNeighbor", [_ones(1, 2, 2, 1), _int([2, 2])], [True, True]),  # both conventions
    ("ResizeBilinear", [_ones(2, 2, 1), _int([3, 3])], [False, False]),  # not 4-D
]
