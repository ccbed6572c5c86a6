"""Table-driven checks over the whole op registry: every op has an example call here (a new op without
one fails the test), runs on it, and rejects bad inputs with a clear ember.errors / TypeError that names
the op — never a crash."""
import atexit
import os
import re
import tempfile

import numpy as np
import pytest

import ember as tf
from ember import _C, errors

import sys  # noqa: E402
sys.path.insert(0, __import__("os").path.dirname(__import__("os").path.abspath(__file__)))  # loaded by path too
import conv_op_examples  # noqa: E402

F = np.arange(6, dtype=np.float32).reshape(2, 3) / 6 + 0.1
I = np.array([[0, 1, 2], [2, 1, 0]], dtype=np.int32)
B = np.array([[True, False, True], [False, True, True]])


def f32(a=F):
    return tf.constant(a, dtype=tf.float32)


UNARY_FLOAT = ["Exp", "Log", "Log1p", "Expm1", "Sqrt", "Rsqrt", "Reciprocal", "Sin", "Cos", "Tan", "Tanh", "Sigmoid",
               "Elu", "Softplus", "Erf", "Floor", "Ceil", "Round", "IsNan", "IsFinite", "Neg", "Abs", "Sign",
               "Square", "Relu", "Relu6", "Asin", "Acos", "Atan", "Asinh", "Atanh", "Lgamma", "Digamma", "Erfinv",
               "Sinh", "Cosh",
               "Rint", "Erfc",
               "BesselI0", "BesselI0e", "BesselI1", "BesselI1e", "BesselJ0", "BesselJ1", "BesselY0", "BesselY1",
               "BesselK0", "BesselK0e", "BesselK1", "BesselK1e", "Dawsn", "Expint", "FresnelCos", "FresnelSin",
               "Spence", "Ndtri"]
BINARY_NUMERIC = ["Add", "Sub", "Mul", "RealDiv", "FloorDiv", "FloorMod", "Pow", "Maximum", "Minimum",
                  "SquaredDifference", "Equal", "NotEqual", "Less", "LessEqual", "Greater", "GreaterEqual", "Atan2",
                  "DivNoNan", "MulNoNan", "Xlogy", "Xdivy", "Xlog1py"]


def fused_program_of_sin_of_product():
    """FusedElementwise's program for sin(x * y) as ember's fusion pass writes it. Its records hold C++ enum
    positions (opcode, UnaryOp/BinaryOp), which a hard-coded copy here would silently get wrong when an
    enum changes; test_fused_elementwise_example_is_sin_of_product checks what the program computes."""
    spec = tf.TensorSpec([2, 3], tf.float32)
    text = tf.function(lambda x, y: tf.sin(x * y)).get_concrete_function(spec, spec).graph.optimized_as_text()
    match = re.search(r"= FusedElementwise\(x:0, y:0\) \{program=\[([-\d,]+)\], results=\[([-\d,]+)\]", text)
    assert match, f"the fusion pass did not fuse sin(x * y) into one FusedElementwise:\n{text}"
    return [int(v) for v in match.group(1).split(",")], [int(v) for v in match.group(2).split(",")]


def fused_reduction_of_sin_of_product():
    """FusedReduction's attributes for reduce_sum(sin(x * y), axis=-1) as the fusion pass writes them (enum
    positions, as above)."""
    spec = tf.TensorSpec([2, 3], tf.float32)
    fn = tf.function(lambda x, y: tf.reduce_sum(tf.sin(x * y), axis=-1))
    text = fn.get_concrete_function(spec, spec).graph.optimized_as_text()
    match = re.search(r"= FusedReduction\(x:0, y:0\) \{program=\[([-\d,]+)\], results=\[([-\d,]*)\], "
                      r"shape=\[2,3\], reduce=\[([-\d,]+)\]", text)
    assert match, f"the fusion pass did not fuse reduce_sum(sin(x * y)) into one FusedReduction:\n{text}"
    ints = lambda group: [int(v) for v in group.split(",")] if group else []  # noqa: E731
    return ints(match.group(1)), ints(match.group(2)), ints(match.group(3))


def examples():
    """op name -> (inputs, attrs) of one valid call."""
    table = {name: ([f32()], []) for name in UNARY_FLOAT}
    table.update({name: ([f32(), f32()], []) for name in BINARY_NUMERIC})
    table["LogicalNot"] = ([tf.constant(B)], [])
    table["LogicalAnd"] = ([tf.constant(B), tf.constant(B)], [])
    table["LogicalOr"] = ([tf.constant(B), tf.constant(B)], [])
    table["Invert"] = ([tf.constant(I)], [])
    table["PopulationCount"] = ([tf.constant(I - 1)], [])
    for name in ["BitwiseAnd", "BitwiseOr", "BitwiseXor", "LeftShift", "RightShift"]:
        table[name] = ([tf.constant(I), tf.constant(I[::-1])], [])
    table["AddN"] = ([[f32(), f32()]], [])
    table["Cast"] = ([f32()], [tf.int32])
    for name in ["Sum", "Mean", "Prod", "Max", "Min", "ReduceLogSumExp"]:
        table[name] = ([f32(), tf.constant([1])], [False])
    table["Any"] = ([tf.constant(B), tf.constant([0])], [True])
    table["All"] = ([tf.constant(B), tf.constant([0])], [False])
    table["ArgMax"] = ([f32(), tf.constant(1)], [tf.int64])
    table["ArgMin"] = ([f32(), tf.constant(0)], [tf.int32])
    table["Cumsum"] = ([f32(), tf.constant(1)], [True, False])
    table["Cumprod"] = ([f32(), tf.constant(0)], [False, True])
    table["MatMul"] = ([f32(), f32()], [False, True])
    table["_FusedMatMul"] = ([f32(), f32(), f32(np.array([0.5, -30.0], np.float32))],
                             [False, True, 1, "BiasAdd,Relu", 0.0, 0.2])
    table["Einsum"] = ([[f32(), f32()]], ["ij,kj->ik"])
    table["MatrixDiagPartV3"] = ([f32(), tf.constant([-1, 1]), f32(np.array(9.0, np.float32))], ["RIGHT_LEFT"])
    table["MatrixDiagV3"] = ([f32(), tf.constant([0, 1]), tf.constant(-1), tf.constant(5),
                              f32(np.array(0.5, np.float32))], ["LEFT_RIGHT"])
    table["MatrixSetDiagV3"] = ([f32(), f32(np.ones([2], np.float32)), tf.constant(0)], ["RIGHT_LEFT"])
    table["Reshape"] = ([f32(), tf.constant([3, -1])], [])
    table["Identity"] = ([f32()], [])
    table["StopGradient"] = ([f32()], [])
    table["Transpose"] = ([f32(), tf.constant([1, 0])], [])
    table["ExpandDims"] = ([f32(), tf.constant(0)], [])
    table["Squeeze"] = ([tf.constant(F[None])], [[0]])
    table["Shape"] = ([f32()], [tf.int32])
    table["ShapeN"] = ([[f32(), tf.constant([1.0, 2.0, 3.0, 4.0])]], [tf.int64])
    table["DynamicStitch"] = ([[tf.constant([0, 2]), tf.constant([[1], [3]])],
                               [f32(F[:2]), f32(F[::-1].reshape(2, 1, 3))]], [])
    table["ParallelDynamicStitch"] = ([[tf.constant([1, 0]), tf.constant([2])], [f32(F), f32(F[:1] * 2.0)]], [])
    table["DynamicPartition"] = ([f32(F), tf.constant([1, 0])], [3])
    table["ListDiff"] = ([tf.constant([1, 2, 3, 4, 2]), tf.constant([2, 4])], [tf.int64])
    table["Size"] = ([f32()], [tf.int64])
    table["Rank"] = ([f32()], [])
    table["ConcatV2"] = ([[f32(), f32()], tf.constant(-1)], [])  # the axis a tensor: symbolic when traced
    table["ConcatOffset"] = ([tf.constant(1), [tf.constant([2, 3]), tf.constant([2, 5]), tf.constant([2, 1])]], [])
    table["Pack"] = ([[f32(), f32()]], [1])
    table["Unpack"] = ([f32()], [2, 0])
    table["SplitV"] = ([f32(), tf.constant([1, 2]), tf.constant(1)], [])
    table["Tile"] = ([f32(), tf.constant([2, 1])], [])
    table["BroadcastTo"] = ([f32(), tf.constant([4, 2, 3])], [])
    table["InvertPermutation"] = ([tf.constant([2, 0, 1])], [])
    table["BroadcastGradientArgs"] = ([tf.constant([2, 3]), tf.constant([3])], [])
    table["Pad"] = ([f32(), tf.constant([[1, 1], [0, 2]])], [0.0, "CONSTANT"])
    table["Slice"] = ([f32(), tf.constant([0, 1]), tf.constant([2, -1])], [])
    table["StridedSlice"] = ([f32(), tf.constant([0, 0]), tf.constant([2, 3]), tf.constant([1, 2])], [0, 0, 0, 0, 0])
    table["GatherV2"] = ([f32(), tf.constant([1, 0]), tf.constant(0)], [0])
    table["StridedSliceGrad"] = ([tf.constant([2, 3]), tf.constant([0, 0]), tf.constant([2, 3]), tf.constant([1, 2]),
                                  tf.constant(F[:, :2])], [0, 0, 0, 0, 0])
    table["UnsortedSegmentSum"] = ([f32(), tf.constant([1, 0]), tf.constant(3)], [])
    table["MirrorPadGrad"] = ([f32(), tf.constant([[0, 0], [1, 0]])], ["REFLECT"])
    table["Where"] = ([tf.constant(B)], [])
    table["SelectV2"] = ([tf.constant(B), f32(), f32()], [])
    table["ClipByValue"] = ([f32(), tf.constant(0.2), tf.constant(0.5)], [])
    table["OneHot"] = ([tf.constant([0, 2]), tf.constant(3), tf.constant(1.0), tf.constant(0.0)], [-1])
    table["Fill"] = ([tf.constant([2, 2]), tf.constant(1.5)], [])
    table["ZerosLike"] = ([f32()], [])
    table["OnesLike"] = ([f32()], [])
    table["Eye"] = ([], [3, -1, [], tf.float32])
    table["Range"] = ([tf.constant(0), tf.constant(5), tf.constant(1)], [])
    table["LinSpace"] = ([tf.constant(0.0), tf.constant(1.0), tf.constant(5)], [])
    table["Softmax"] = ([f32()], [-1])
    for name in ("ReluGrad", "Relu6Grad", "EluGrad", "SeluGrad", "SoftplusGrad", "SoftsignGrad", "SigmoidGrad",
                 "TanhGrad", "SqrtGrad", "RsqrtGrad", "ReciprocalGrad"):
        table[name] = ([f32(), f32(F[::-1] * 6.0 - 3.0)], [])  # the second operand crosses 0
    table["LeakyReluGrad"] = ([f32(), f32(F - 3.0)], [0.3])
    table["LeakyRelu"] = ([f32(F - 3.0)], [0.3])
    table["Selu"] = ([f32(F * 6.0 - 3.0)], [])
    table["Softsign"] = ([f32(F * 6.0 - 3.0)], [])
    table["LogSoftmax"] = ([f32()], [0])
    table["BiasAdd"] = ([f32(), tf.constant([1.0, 2.0, 3.0])], ["NHWC"])
    table["BiasAddGrad"] = ([tf.constant(np.arange(24, dtype=np.float32).reshape(2, 3, 4) / 7)], ["NCHW"])
    table["L2Loss"] = ([f32()], [])
    table["SigmoidCrossEntropyWithLogits"] = ([f32(), f32()], [])
    table["SoftmaxCrossEntropyWithLogits"] = ([f32(), f32()], [])
    table["SparseSoftmaxCrossEntropyWithLogits"] = ([f32(), tf.constant([0, 2])], [])
    for name in ["RandomUniform", "RandomStandardNormal", "TruncatedNormal"]:
        table[name] = ([tf.constant([2, 3])], [tf.float32, 1, 2])
    for name in ["StatelessRandomUniform", "StatelessRandomNormal", "StatelessTruncatedNormal"]:
        table[name] = ([tf.constant([2, 3]), tf.constant([1, 2])], [tf.float32])
    table["RandomUniformInt"] = ([tf.constant([4])], [0, 10, tf.int32, 1, 2])
    table["Const"] = ([], [tf.constant([1.0, 2.0])])
    square = tf.function(lambda x: x * x).get_concrete_function(tf.TensorSpec([2], tf.float32))
    table["PartitionedCall"] = ([[tf.constant([1.0, 2.0])]], [square.name])
    negate = tf.function(lambda x: -x).get_concrete_function(tf.TensorSpec([2], tf.float32))
    for name in ["If", "StatelessIf"]:
        table[name] = ([tf.constant(True), [tf.constant([1.0, 2.0])]], [square.name, negate.name])
    for name in ["Case", "StatelessCase"]:
        table[name] = ([tf.constant(1), [tf.constant([1.0, 2.0])]], [negate.name + "," + square.name])
    below = tf.function(lambda x: tf.reduce_sum(x) < 100.0).get_concrete_function(tf.TensorSpec([2], tf.float32))
    double = tf.function(lambda x: x * 2.0).get_concrete_function(tf.TensorSpec([2], tf.float32))
    for name in ["While", "StatelessWhile"]:
        table[name] = ([[tf.constant([1.0, 2.0])]], [below.name, double.name, 10])
    table["_keepalive"] = (square, negate, below, double)
    variable = tf.Variable([[1.0, 2.0, 3.0], [4.0, 5.0, 6.0]])
    table["_variable"] = variable
    table["ReadFile"] = ([tf.constant(__file__)], [])
    table["WriteFile"] = ([tf.constant(os.path.join(tempfile.gettempdir(), "ember_registry_write_file.txt")),
                           tf.constant("written by the registry test")], [])
    table["EncodeWav"] = ([f32() / 2.0, tf.constant(8000)], [])
    table["DecodeWav"] = ([tf.audio.encode_wav(f32() / 2.0, 8000)], [-1, -1])
    pixels = tf.cast(tf.reshape(tf.range(24), [2, 4, 3]) * 10, tf.uint8)
    jpeg, png = tf.io.encode_jpeg(pixels), tf.io.encode_png(pixels)
    jpeg_attrs = [0, 1, True, False, 1.0, ""]
    table["EncodeJpeg"] = ([pixels], ["", 95, False, False, True, "in", 300, 300, ""])
    table["EncodePng"] = ([pixels], [-1])
    table["DecodeJpeg"] = ([jpeg], jpeg_attrs)
    table["DecodeAndCropJpeg"] = ([jpeg, tf.constant([0, 1, 2, 2])], jpeg_attrs)
    table["ExtractJpegShape"] = ([jpeg], [tf.int32])
    table["DecodePng"] = ([png], [0, tf.uint8])
    table["DecodeGif"] = ([png], [])
    table["DecodeBmp"] = ([tf.constant(b"BM" + bytes(8) + bytes([54, 0, 0, 0, 40, 0, 0, 0, 1, 0, 0, 0, 1, 0, 0, 0, 1,
                                                                  0, 24, 0]) + bytes(24) + b"\x01\x02\x03\x00")], [0])
    table["DecodeImage"] = ([png], [0, tf.float32, True])
    table["PrintV2"] = ([[f32()]], ["printed by the registry test: \x1f", "stderr", "\n", 3])
    # With no default summary writer (the registry test's case) both are no-ops (test_summary.py writes).
    table["ContextWriteSummary"] = ([tf.constant(True), tf.constant(1, tf.int64), f32()], ["registry", "", 0, 0,
                                                                                         0.0, ""])
    table["ContextFlushSummary"] = ([], [])
    table["Assert"] = ([tf.constant(True), [f32()]], ["[x:] \x1f", 3])
    table["EnsureShape"] = ([f32()], [[-1, 3], False])
    from ember.ops import script_ops  # the py_func ops call a function the package registered
    # float32 whatever the input's dtype: the gradient checks feed float64 to an op whose Tout says float32
    # (the op's handle attribute keeps it registered while the table holds the op's attributes)
    doubling, handle = script_ops._register(lambda a: tf.cast(a * 2, tf.float32), [tf.float32])
    for name in ("EagerPyFunc", "PyFunc", "PyFuncStateless"):
        table[name] = ([[f32()]], [doubling, [tf.float32], handle])
    from ember.data import staged  # the dataset ops iterate a dataset the package registered
    counting = staged._register(tf.data.Dataset.range(1 << 40))
    table["_dataset"] = counting
    table["DatasetIteratorCreate"] = ([tf.constant(counting, tf.int64)], [])
    table["DatasetIteratorNext"] = ([tf.constant(staged._create(counting), tf.int64)], [[tf.int64._enum], [0], False])
    table["DatasetIteratorDelete"] = ([tf.constant(staged._create(counting), tf.int64)], [])
    table["InplaceUpdate"] = ([f32(), tf.constant([1]), tf.constant([[7.0, 8.0, 9.0]])], [])
    # TensorFlow's TensorList ops on dense lists (imported GraphDefs; ops/tensor_array.cc).
    rows = tf.constant([[1.0, 2.0], [3.0, 4.0]])
    table["TensorListReserve"] = ([tf.constant([2]), tf.constant(3)], [tf.float32])
    table["EmptyTensorList"] = ([tf.constant([2]), tf.constant(-1)], [tf.float32])
    table["TensorListFromTensor"] = ([rows, tf.constant([2])], [])
    table["TensorListGetItem"] = ([rows, tf.constant(1), tf.constant([2])], [tf.float32])
    table["TensorListSetItem"] = ([rows, tf.constant(0), tf.constant([5.0, 6.0])], [tf.float32, False])
    table["TensorListPushBack"] = ([rows, tf.constant([5.0, 6.0])], [tf.float32])
    table["TensorListPopBack"] = ([rows, tf.constant([2])], [tf.float32])
    table["TensorListStack"] = ([rows, tf.constant([2])], [tf.float32, -1])
    table["TensorListLength"] = ([rows], [])
    table["TensorListElementShape"] = ([rows], [tf.int32])
    table["TensorListGather"] = ([rows, tf.constant([1, 0]), tf.constant([2])], [tf.float32])
    table["TensorListScatter"] = ([rows, tf.constant([1, 0]), tf.constant([2])], [])
    table["TensorListScatterV2"] = ([rows, tf.constant([2, 0]), tf.constant([2]), tf.constant(4)], [])
    table["TensorListScatterIntoExistingList"] = ([rows, tf.constant([[9.0, 8.0]]), tf.constant([1])], [tf.float32])
    table["TensorListConcat"] = ([rows], [tf.float32, [-1]])
    table["TensorListConcatV2"] = ([rows, tf.constant([-1]), tf.constant([], tf.int64)], [tf.float32])
    table["TensorListSplit"] = ([tf.constant([1.0, 2.0, 3.0, 4.0]), tf.constant([-1]), tf.constant([2, 2], tf.int64)],
                                [])
    table["ReadVariableOp"] = ([], [variable._id, tf.float32, [2, 3]])
    for name in ["AssignVariableOp", "AssignAddVariableOp", "AssignSubVariableOp"]:
        table[name] = ([f32()], [variable._id])
    for name in ["ResourceScatterUpdate", "ResourceScatterAdd", "ResourceScatterSub", "ResourceScatterMul",
                 "ResourceScatterDiv", "ResourceScatterMin", "ResourceScatterMax"]:
        table[name] = ([tf.constant([1, 0]), f32()], [variable._id])
    for name in ["ResourceScatterNdUpdate", "ResourceScatterNdAdd", "ResourceScatterNdSub", "ResourceScatterNdMin",
                 "ResourceScatterNdMax"]:
        table[name] = ([tf.constant([[1, 2], [0, 1]]), f32(np.array([0.25, 0.75], np.float32))], [variable._id])
    table["CheckNumerics"] = ([f32()], ["checked by the registry test"])
    table["Bitcast"] = ([f32()], [tf.uint8])  # narrowing: every declared dtype can
    table["StatelessRandomUniformInt"] = ([tf.constant([4]), tf.constant([1, 2])], [0, 10, tf.int64])
    table["StatelessRandomUniformFullInt"] = ([tf.constant([4]), tf.constant([1, 2])], [tf.int64])
    key_counter = [tf.constant([5], tf.int64), tf.constant([1, 2], tf.int64), tf.constant(1)]
    for name in ["StatelessRandomUniformV2", "StatelessRandomNormalV2", "StatelessTruncatedNormalV2"]:
        table[name] = ([tf.constant([2, 3])] + key_counter, [tf.float32])
    table["StatelessRandomUniformIntV2"] = ([tf.constant([4])] + key_counter, [0, 10, tf.int64])
    table["StatelessRandomUniformFullIntV2"] = ([tf.constant([4])] + key_counter, [tf.int64])
    rng_state = tf.Variable(tf.constant([1, 0, 0], tf.int64), trainable=False)
    table["_rng_state"] = rng_state
    table["Multinomial"] = ([f32(), tf.constant(5)], [1, 2, tf.int64])
    table["StatelessMultinomial"] = ([f32(), tf.constant(5), tf.constant([1, 2])], [tf.int32])
    table["RandomShuffle"] = ([f32()], [1, 2])
    table["RandomGamma"] = ([tf.constant([2]), tf.constant([1.0, 3.0])], [1, 2])
    table["StatelessRandomGammaV2"] = ([tf.constant([3, 2]), tf.constant([1, 2]), tf.constant([0.5, 3.0])], [])
    table["RandomPoissonV2"] = ([tf.constant([2]), tf.constant([1.0, 30.0])], [1, 2, tf.int64])
    table["StatelessRandomPoisson"] = ([tf.constant([3, 2]), tf.constant([1, 2]), tf.constant([4.0, 20.0])],
                                       [tf.int32])
    table["RngReadAndSkip"] = ([tf.constant(1), tf.constant(3, tf.int64)], [rng_state._id])
    table["StatelessRandomBinomial"] = ([tf.constant([3, 2]), tf.constant([1, 2]), tf.constant([10.0, 20.0]),
                                         tf.constant([0.5, 0.8])], [tf.int32])
    table["StatefulRandomBinomial"] = ([tf.constant(1), tf.constant([3, 2]), tf.constant([10.0, 20.0]),
                                        tf.constant([0.5, 0.8])], [rng_state._id, tf.int32])
    table["Acosh"] = ([f32(F + 1)], [])
    table["Polygamma"] = ([f32(np.array([[0, 1, 2], [3, 1, 0]], np.float32)), f32()], [])
    positive = f32(np.abs(F) + 0.5)
    for name in ("Igamma", "Igammac", "IgammaGradA"):
        table[name] = ([positive, f32(np.abs(F) + 0.25)], [])
    table["Zeta"] = ([f32(np.abs(F) + 1.5), positive], [])
    table["Betainc"] = ([positive, f32(np.abs(F) + 1.0), f32(np.full((2, 3), 0.3, np.float32))], [])
    table["CumulativeLogsumexp"] = ([f32(), tf.constant(1)], [True, False])
    table["ReverseV2"] = ([f32(), tf.constant([1])], [])
    table["Roll"] = ([f32(), tf.constant([1, -1]), tf.constant([1, 0])], [])
    # N-d indexing, segments, sorting and selection (src/ember/ops/scatter_nd.cc, sort.cc)
    nd = tf.constant([[1, 2], [0, 0], [1, 1]])
    table["GatherNd"] = ([f32(), tf.constant([[1, 2], [0, 1]])], [])
    table["ScatterNd"] = ([nd, f32(np.arange(3, dtype=np.float32) + 0.5), tf.constant([2, 3])], [])
    for name in ["TensorScatterUpdate", "TensorScatterAdd", "TensorScatterSub", "TensorScatterMin",
                 "TensorScatterMax"]:
        table[name] = ([f32(), tf.constant([[1, 2], [0, 1]]), f32(np.array([0.25, 0.75], np.float32))], [])
    for name in ["UnsortedSegmentMax", "UnsortedSegmentMin", "UnsortedSegmentProd"]:
        table[name] = ([f32(), tf.constant([1, 0]), tf.constant(3)], [])
    for name in ["SegmentSum", "SegmentMean", "SegmentMax", "SegmentMin", "SegmentProd"]:
        table[name] = ([f32(), tf.constant([0, 2])], [])
    # Rows 1, 0, 1 of data into sorted segments 0, 0, 2 (segment 1 empty).
    for name in ["SparseSegmentSum", "SparseSegmentMean", "SparseSegmentSqrtN"]:
        table[name] = ([f32(), tf.constant([1, 0, 1]), tf.constant([0, 0, 2])], [False])
        table[name + "WithNumSegments"] = ([f32(), tf.constant([1, 0, 1]), tf.constant([0, 0, 2]), tf.constant(4)],
                                           [False])
    table["TopKV2"] = ([f32(), tf.constant(2)], [True, tf.int32])
    table["InTopKV2"] = ([f32(), tf.constant([2, 0]), tf.constant(1)], [])
    table["LowerBound"] = ([f32(np.sort(F, axis=1)), f32()], [tf.int32])
    table["Bucketize"] = ([f32()], [[0.2, 0.5, 0.5, 0.75]])
    table["IsotonicRegression"] = ([f32()], [tf.float32])
    sample_boxes = tf.constant([[[0.1, 0.2, 0.5, 0.7]]])
    table["DrawBoundingBoxes"] = ([tf.zeros([1, 4, 5, 3]), sample_boxes], [])
    table["DrawBoundingBoxesV2"] = ([tf.zeros([1, 4, 5, 3]), sample_boxes, tf.constant([[1.0, 0.0, 0.0]])], [])
    table["EncodeJpegVariableQuality"] = ([tf.zeros([4, 4, 3], tf.uint8), tf.constant(50)], [])
    table["SampleDistortedBoundingBoxV2"] = ([tf.constant([8, 6, 3]), sample_boxes, tf.constant(0.1)],
                                             [3, 4, [0.75, 1.33], [0.05, 1.0], 100, False])
    table["StatelessSampleDistortedBoundingBox"] = ([tf.constant([8, 6, 3]), sample_boxes, tf.constant(0.1),
                                                     tf.constant([1, 2])], [[0.75, 1.33], [0.05, 1.0], 100, False])
    table["ApproxTopK"] = ([f32()], [2, -1, 0.95, True, -1, True])
    table["UpperBound"] = ([f32(np.sort(F, axis=1)), f32()], [tf.int64])
    table["Unique"] = ([f32(np.array([0.5, 0.25, 0.5, 1.0], np.float32))], [tf.int32])
    table["UniqueWithCounts"] = ([f32(np.array([0.5, 0.25, 0.5, 1.0], np.float32))], [tf.int64])
    # Sparse and counting kernels (src/ember/ops/sparse.cc, bincount.cc)
    sp_idx = tf.constant([[0, 1], [1, 0], [1, 2]], tf.int64)
    table["SparseTensorDenseMatMul"] = ([sp_idx, f32(np.array([0.5, -1.0, 2.0], np.float32)),
                                         tf.constant([2, 3], tf.int64), f32()], [False, True])
    table["SparseToDense"] = ([sp_idx, tf.constant([2, 3], tf.int64), f32(np.array([0.5, -1.0, 2.0], np.float32)),
                               f32(np.array(0.25, np.float32))], [True])
    sp_b = tf.constant([[0, 1], [1, 1]], tf.int64)
    table["SparseAdd"] = ([sp_idx, f32(np.array([0.5, -1.0, 2.0], np.float32)), tf.constant([2, 3], tf.int64), sp_b,
                           f32(np.array([1.0, 3.0], np.float32)), tf.constant([2, 3], tf.int64),
                           tf.constant(0.0, tf.float64)], [])
    # thresh is float64 whatever the values' dtype (the table casts float32 data only), and 0: TensorFlow's
    # kernel reads thresh as the values' real type whatever its dtype (0.25 read as an int64 is huge), which
    # only 0 survives. Dropping small sums is compared in test_sparse.py and sparse_test.cc.
    table["SparseAddGrad"] = ([f32(np.array([1.0, 2.0, 3.0, 4.0], np.float32)), sp_idx, sp_b,
                               tf.constant([[0, 1], [1, 0], [1, 1], [1, 2]], tf.int64)], [])
    table["SparseReduceSum"] = ([sp_idx, f32(np.array([0.5, -1.0, 2.0], np.float32)), tf.constant([2, 3], tf.int64),
                                 tf.constant([-1])], [True])
    table["SparseReshape"] = ([sp_idx, tf.constant([2, 3], tf.int64), tf.constant([3, -1], tf.int64)], [])
    table["Bincount"] = ([tf.constant([1, 1, 3]), tf.constant(4), f32(np.array([0.5, 1.0, 2.0], np.float32))], [])
    table["DenseBincount"] = ([tf.constant([[1, 1], [0, 2]]), tf.constant(3), f32(np.ones([2, 2], np.float32))],
                              [False])
    table["HistogramFixedWidth"] = ([f32(), f32(np.array([-1.0, 1.0], np.float32)), tf.constant(4)], [tf.int32])
    # TensorFlow's other partition layout (ROW_SPLITS alone: ember's RaggedTensor.to_tensor, test_ragged.py).
    table["RaggedTensorToTensor"] = ([tf.constant([-1, 4], tf.int64), f32(np.array([0.5, -1.0, 2.0], np.float32)),
                                      f32(np.array(0.25, np.float32)),
                                      [tf.constant(3, tf.int64), tf.constant([0, 0, 2], tf.int64)]],
                                     ["FIRST_DIM_SIZE,VALUE_ROWIDS"])
    table["RaggedTensorToTensorGrad"] = ([f32(np.ones([3, 4], np.float32)), f32(np.zeros([3], np.float32)),
                                          [tf.constant([0, 2, 2, 3], tf.int64)]], [""])
    table["RaggedBincount"] = ([tf.constant([0, 2, 2, 3], tf.int64), tf.constant([1, 1, 0]), tf.constant(3),
                                f32(np.array([0.5, 1.0, 2.0], np.float32))], [False])
    # Linear algebra through LAPACK (src/ember/ops/linalg_lapack.cc): a well-conditioned and a symmetric
    # positive definite matrix, so values and finite differences are stable.
    sq = f32(np.array([[2.0, 0.5, 0.1], [0.3, 1.5, 0.2], [0.1, 0.4, 1.8]], np.float32))
    spd = f32(np.array([[2.0, 0.5, 0.1], [0.5, 1.5, 0.2], [0.1, 0.2, 1.8]], np.float32))
    table["MatrixInverse"] = ([sq], [False])
    table["MatrixDeterminant"] = ([sq], [])
    table["LogMatrixDeterminant"] = ([sq], [])
    table["Cholesky"] = ([spd], [])
    table["MatrixSolve"] = ([sq, f32(F.T.copy())], [True])
    table["MatrixTriangularSolve"] = ([sq, f32(F.T.copy())], [False, True])
    table["MatrixBandPart"] = ([f32(), tf.constant(1), tf.constant(0)], [])
    table["SelfAdjointEigV2"] = ([spd], [True])
    table["Qr"] = ([f32(F.T.copy())], [False])
    table["Svd"] = ([sq], [True, False])
    table["Eig"] = ([sq], [True, tf.complex64])
    table["Lu"] = ([sq], [tf.int32])
    table["MatrixSquareRoot"] = ([sq], [])
    table["MatrixLogarithm"] = ([tf.constant(sq.numpy().astype(np.complex64))], [])
    table["TridiagonalSolve"] = ([f32(np.array([[0.5, -0.25, 0.0], [2.0, 1.5, 1.75], [0.0, 0.3, -0.4]], np.float32)),
                                  f32(F.T.copy())], [True, False])
    program, results = fused_program_of_sin_of_product()
    table["FusedElementwise"] = ([[f32(), f32()]], [program, results, [2, 3]])
    program, results, reduce = fused_reduction_of_sin_of_product()
    table["FusedReduction"] = ([[f32(), f32()]], [program, results, [2, 3], reduce])
    table.update(conv_op_examples.examples())
    # Collectives in a group of one (no other worker needed); across processes: test_multi_worker.py.
    one = [tf.constant(1), tf.constant(1), tf.constant(1)]
    table["CollectiveReduceV2"] = ([f32(), *one], ["Add", "Div", "auto", 0.0])
    table["CollectiveGatherV2"] = ([f32(), *one], ["auto", 0.0])
    table["CollectiveBcastSendV2"] = ([f32(), *one], ["auto", 0.0])
    table["_CollectiveReduceStart"] = ([f32(), *one], ["Add", "Div", "auto", 0.0])
    table["_CollectiveReduceDone"] = ([tf.constant(0, tf.int64), f32()], [])  # 0: a group of one's handle
    # String ops (src/ember/ops/strings.cc), compared with TensorFlow in test_strings.py.
    words = tf.constant(["a b", "Cd"])
    table["StringLength"] = ([tf.constant(["a", "bé"])], ["UTF8_CHAR"])
    table["StringJoin"] = ([[words, tf.constant("-")]], [","])
    table["ReduceJoin"] = ([tf.constant([["a", "b"], ["c", "d"]]), tf.constant([1])], [False, "+"])
    table["StringFormat"] = ([[f32()]], ["x={}", "{}", 3])
    table["StringToNumber"] = ([tf.constant(["1.5", "2"])], [tf.float32])
    table["AsString"] = ([f32()], [2, False, False, -1, ""])
    table["RegexReplace"] = ([words, tf.constant("[a-z]"), tf.constant("x")], [True])
    table["StaticRegexReplace"] = ([words], ["[a-z]", "x", True])
    table["RegexFullMatch"] = ([words, tf.constant("a.*")], [])
    table["StaticRegexFullMatch"] = ([words], ["a.*"])
    table["Substr"] = ([words, tf.constant([0, 1]), tf.constant([2, 5])], ["BYTE"])
    table["StringUpper"] = ([words], [""])
    table["StringLower"] = ([words], [""])
    table["StringStrip"] = ([tf.constant([" a ", "b\n"])], [])
    table["StringSplitV2"] = ([words, tf.constant("")], [-1])
    table["StringNGrams"] = ([tf.constant(["a", "b", "c", "d"]), tf.constant([0, 3, 3, 4], tf.int64)],
                             [" ", [1, 2], "<", ">", 1, False])
    table["StringToHashBucketFast"] = ([words], [10])
    raw = tf.constant([b"\x01\x02\x03\x04", b"\x05\x06\x07\x08"])  # test_strings_bytes.py compares with TF
    table["DecodeRaw"] = ([raw], [tf.int16, True])
    table["DecodePaddedRaw"] = ([tf.constant([b"\x01\x02\x03", b"\x04"]), tf.constant(4)], [tf.int16, False])
    table["EncodeBase64"] = ([words], [True])
    table["Timestamp"] = ([], [])  # test_print.py compares it with tf.timestamp
    table["DecodeBase64"] = ([tf.constant(["YQ==", "aGk"])], [])
    table["UnicodeDecode"] = ([tf.constant(["hé", "x"])], ["UTF-8", "replace", 65533, False, tf.int64])
    table["UnicodeTranscode"] = ([tf.constant([b"h\xc3\xa9\xff", b"x"])], ["UTF-8", "UTF-16-BE", "replace", 65533,
                                                                          False])
    # Complex numbers and FFTs (tests/python/test_complex.py, test_fft.py check them against TensorFlow).
    c64 = tf.constant((F + 1j * F[::-1]).astype(np.complex64))
    table["Complex"] = ([f32(), f32(F[::-1].copy())], [])
    for name in ["Real", "Imag", "Conj", "ComplexAbs", "Angle", "FFT", "IFFT", "FFT2D", "IFFT2D"]:
        table[name] = ([c64], [])
    table["FFT3D"] = ([tf.reshape(c64, [1, 2, 3])], [])
    table["IFFT3D"] = ([tf.reshape(c64, [1, 2, 3])], [])
    table["RFFT"] = ([f32(), tf.constant([4])], [])
    table["IRFFT"] = ([c64, tf.constant([4])], [])
    table["RFFT2D"] = ([f32(), tf.constant([2, 3])], [])
    table["IRFFT2D"] = ([c64, tf.constant([2, 4])], [])
    table["RFFT3D"] = ([f32(F.reshape(1, 2, 3)), tf.constant([1, 2, 3])], [])
    table["IRFFT3D"] = ([tf.reshape(c64, [1, 2, 3]), tf.constant([1, 2, 4])], [])
    example = (b"\n\x0f\n\r\n\x01x\x12\x08\x12\x06\n\x04\x00\x00\x80?")  # {"x": float_list [1.0]}
    keys, no_keys = tf.constant(["x"]), tf.constant(np.array([], dtype=object), tf.string)
    table["ParseExampleV2"] = ([tf.constant([example, example]), no_keys, keys, keys, keys, [tf.zeros([0])]],
                               [[tf.float32], 1, [tf.float32], [tf.float32], [tf.int64], [[1]]])
    sequence = b"\x12\x0e\n\x0c\n\x01x\x12\x07\n\x05\x1a\x03\n\x01\x05"  # feature list "x": [[5]]
    table["ParseSequenceExampleV2"] = (
        [tf.constant([sequence, sequence]), no_keys, no_keys, no_keys, no_keys, keys, keys, keys,
         tf.constant([True]), []],
        [0, [], [], [], [], [], 1, 1, [tf.int64], [tf.int64], [tf.int64], [tf.int32], [[]]])
    i64 = lambda v: tf.constant(v, tf.int64)  # noqa: E731
    table["SetSize"] = ([i64([[0, 0], [0, 1], [1, 0]]), tf.constant([3, 3, 4]), i64([2, 2])], [True])
    table["DenseToDenseSetOperation"] = ([tf.constant([[1, 2], [3, 3]]), tf.constant([[2, 5], [4, 3]])],
                                         ["union", True])
    table["DenseToSparseSetOperation"] = ([tf.constant([[1, 2], [3, 3]]), i64([[0, 0], [1, 1]]),
                                           tf.constant([2, 4]), i64([2, 2])], ["a-b", True])
    table["SparseToSparseSetOperation"] = ([i64([[0, 0], [1, 1]]), tf.constant([2, 4]), i64([2, 2]),
                                            i64([[0, 1]]), tf.constant([2]), i64([2, 2])], ["intersection", True])
    table["DecodeCSV"] = ([tf.constant(["1,a,2.5", '2,"b,c",']), [tf.constant([0]), tf.constant([""]),
                                                                  tf.constant([0.5])]],
                          [[tf.int32, tf.string, tf.float32], ",", True, "", []])
    table["UnicodeEncode"] = ([tf.constant([104, 233, 120]), tf.constant([0, 2, 3], tf.int64)],
                              ["replace", "UTF-8", 65533, tf.int64])
    table["PreventGradient"] = ([f32()], ["no gradient here"])
    ctc_logits = tf.constant(np.linspace(-1.0, 1.0, 24, dtype=np.float32).reshape(4, 2, 3))
    table["CTCLoss"] = ([ctc_logits, tf.constant([[0, 0], [0, 1], [1, 0]], tf.int64), tf.constant([0, 1, 1]),
                         tf.constant([4, 3])], [False, True, False])
    table["CTCLossDense"] = ([ctc_logits, tf.constant([[1, 2], [2, 0]]), tf.constant([2, 1]), tf.constant([4, 3])], [0])
    table["CTCGreedyDecoder"] = ([ctc_logits, tf.constant([4, 3])], [True, -1])
    table["CTCBeamSearchDecoder"] = ([ctc_logits, tf.constant([4, 3])], [3, 2, True])
    _lookup_examples(table)
    return table


def _lookup_examples(table):
    """The table ops on tables kept alive in the table (as _rng_state); each example may run many times, so
    each leaves its table as it found it (initializing with the same entries again changes nothing)."""
    keys, values = tf.constant(["a", "b"]), tf.constant([1, 2], tf.int64)
    static = tf.lookup.StaticHashTable(tf.lookup.KeyValueTensorInitializer(keys, values), -1)
    mutable = tf.lookup.experimental.MutableHashTable(tf.string, tf.int64, -1)
    mutable.insert(keys, values)
    vocabulary = tempfile.NamedTemporaryFile("w", suffix=".txt", delete=False)
    vocabulary.write("a\nb\n")
    vocabulary.close()
    atexit.register(os.remove, vocabulary.name)
    from_file = tf.lookup.StaticHashTable(tf.lookup.TextFileInitializer(
        vocabulary.name, tf.string, tf.lookup.TextFileIndex.WHOLE_LINE, tf.int64,
        tf.lookup.TextFileIndex.LINE_NUMBER), -1)
    table["_lookup_tables"] = (static, mutable, from_file)
    table["LookupTableFindV2"] = ([tf.constant([["a", "x"], ["b", "a"]]), tf.constant(-1, tf.int64)], [static._id])
    table["LookupTableInsertV2"] = ([keys, values], [mutable._id])
    table["LookupTableImportV2"] = ([keys, values], [mutable._id])
    table["LookupTableRemoveV2"] = ([tf.constant(["absent"])], [mutable._id])
    table["InitializeTableV2"] = ([keys, values], [static._id])
    table["LookupTableSizeV2"] = ([], [static._id])
    table["LookupTableExportV2"] = ([], [static._id, tf.string, tf.int64])
    table["InitializeTableFromTextFileV2"] = ([tf.constant(vocabulary.name)], [from_file._id, -2, -1])
    # Created by name, so every run returns the one table the registry keeps under it.
    table["HashTableV2"] = ([], ["", "op_registry_example", False, tf.string, tf.int64])
    table["MutableHashTableV2"] = ([], ["", "op_registry_example_mutable", False, tf.string, tf.int64])
    table["MutableDenseHashTableV2"] = ([tf.constant(""), tf.constant("$")],
                                        ["", "op_registry_example_dense", False, tf.string, tf.int64])


EXAMPLES = examples()
# Placeholder only exists inside graphs (its kernel says it must be fed); tested in test_function.py. _Send and
# _Recv only inside the partitions of multi-device functions (without a rendezvous they fail).
GRAPH_ONLY = {"Placeholder", "_Send", "_Recv"}  # _Send/_Recv: test_multi_device_function.py
# A receive needs a sending worker: tested across processes in test_multi_worker.py.
NEEDS_PEERS = {"CollectiveBcastRecvV2"}
OP_NAMES = sorted(n for n in _C.op_names() if n not in GRAPH_ONLY | NEEDS_PEERS)
INFO = {name: _C.op_info(name) for name in OP_NAMES}
_PROBE_DTYPES = (tf.bool, tf.uint8, tf.float64, tf.int8)


def _unsupported_probe(name):
    supported = set(INFO[name]["kernel_dtypes"])
    return next((d for d in _PROBE_DTYPES if d._enum not in supported), None)


# Each check runs on the ops it applies to (an op with no inputs cannot miss one).
OPS_WITH_INPUTS = [n for n in OP_NAMES if INFO[n]["inputs"]]
OPS_WITH_ATTRS = [n for n in OP_NAMES if INFO[n]["attrs"]]
OPS_WITH_EXAMPLE_INPUTS = [n for n in OP_NAMES if n in EXAMPLES and EXAMPLES[n][0]]
OPS_WITH_A_REJECTED_DTYPE = [n for n in OPS_WITH_EXAMPLE_INPUTS
                             if any(isinstance(x, tf.Tensor) for x in EXAMPLES[n][0]) and _unsupported_probe(n)]


def test_every_registered_op_has_an_example():
    missing = [name for name in OP_NAMES if name not in EXAMPLES and name not in GRAPH_ONLY]
    assert not missing, f"ops without an example in test_op_registry.py: {missing}"


def test_every_op_is_documented():
    for name in OP_NAMES:
        info = _C.op_info(name)
        assert info["doc"], name
        assert info["kernel_dtypes"], name


@pytest.mark.parametrize("name", OP_NAMES)
def test_example_runs(name):
    inputs, attrs = EXAMPLES[name]
    out = _C.op(name)(*inputs, *attrs)
    outs = out if isinstance(out, tuple) else (out,)
    assert outs or INFO[name]["stateful"], f"{name} returned nothing"
    for o in outs:
        assert isinstance(o, tf.Tensor)
        np.asarray(o)  # readable


@pytest.mark.parametrize("name", OPS_WITH_INPUTS)
def test_missing_inputs_are_a_type_error(name):
    with pytest.raises(TypeError, match=name):
        _C.op(name)()


@pytest.mark.parametrize("name", OPS_WITH_A_REJECTED_DTYPE)
def test_wrong_dtype_is_an_invalid_argument_error(name):
    inputs, attrs = EXAMPLES[name]
    first = next(i for i, x in enumerate(inputs) if isinstance(x, tf.Tensor))
    bad = _unsupported_probe(name)
    wrong = list(inputs)
    if inputs[first].dtype == tf.string:
        wrong[first] = tf.zeros(inputs[first].shape, bad)
    else:
        wrong[first] = tf.cast(tf.cast(inputs[first], tf.int32), bad) if bad != tf.bool else \
            tf.cast(inputs[first], tf.bool)
    with pytest.raises(errors.InvalidArgumentError, match=name):
        _C.op(name)(*wrong, *attrs)


@pytest.mark.parametrize("name", OPS_WITH_ATTRS)
def test_wrong_attribute_type_is_a_type_error(name):
    inputs, attrs = EXAMPLES[name]
    # An object of a type no attribute accepts.
    bad_attrs = [object()] + list(attrs[1:])
    with pytest.raises(TypeError, match=name):
        _C.op(name)(*inputs, *bad_attrs)


@pytest.mark.parametrize("name", OPS_WITH_EXAMPLE_INPUTS)
def test_non_numeric_input_is_rejected(name):
    """A value that converts to no tensor is a TypeError/ValueError; a string where the op takes none is
    TensorFlow's InvalidArgumentError naming the op."""
    inputs, attrs = EXAMPLES[name]
    with pytest.raises((TypeError, ValueError)):
        _C.op(name)(*([object()] + list(inputs[1:])), *attrs)
    if tf.string._enum not in INFO[name]["kernel_dtypes"] and not isinstance(inputs[0], list):
        with pytest.raises((TypeError, ValueError, errors.InvalidArgumentError)):
            _C.op(name)(*(["not a number"] + list(inputs[1:])), *attrs)


def test_too_many_attributes():
    with pytest.raises(TypeError, match="Cast takes 1 attribute"):
        _C.op("Cast")(f32(), tf.int32, 5)


def test_allocation_too_large_is_resource_exhausted():
    with pytest.raises(errors.ResourceExhaustedError, match="bytes"):
        tf.zeros([1 << 30, 1 << 30])
    with pytest.raises((errors.ResourceExhaustedError, errors.InvalidArgumentError)):
        tf.random.uniform([1 << 25, 1 << 25])


NON_DETERMINISTIC = {"RandomUniform", "RandomStandardNormal", "TruncatedNormal", "RandomUniformInt",
                     "RngReadAndSkip", "Multinomial", "RandomShuffle", "RandomGamma", "RandomPoissonV2",
                     "SampleDistortedBoundingBoxV2",
                     "StatefulRandomBinomial", "DatasetIteratorCreate", "DatasetIteratorNext",  # each call advances the state it returns
                     # without a shared_name each call makes a new table, whose id it returns
                     "HashTableV2", "MutableHashTableV2", "MutableDenseHashTableV2",
                     "Timestamp"}  # the clock when it runs


def _eager_matches_traced(name, unknown_dims):
    """The op run eagerly and traced into a graph function (its tensor inputs become the function's
    arguments, so the op is a graph node, not folded) gives the same result. With unknown_dims every
    dimension of every tensor input is None in the signature: shape-like operands are then symbolic tensors
    of the graph, read at run time."""
    inputs, attrs = EXAMPLES[name]
    op = _C.op(name)

    def call(*tensors):
        it = iter(tensors)
        rebuilt = [next(it) if isinstance(x, tf.Tensor) else [next(it) for _ in x] if isinstance(x, list) else x
                   for x in inputs]
        return op(*rebuilt, *attrs)

    # The tensors in input order (list inputs contribute their members), as `call` rebuilds them.
    args = []
    for x in inputs:
        args.extend(x if isinstance(x, list) else [x] if isinstance(x, tf.Tensor) else [])
    signature = None
    if unknown_dims:
        signature = [tf.TensorSpec([None] * a.shape.rank, a.dtype) for a in args]
        if name == "SplitV":  # the number of outputs is size_splits' length: it must be known (TF: num_split)
            signature[1] = tf.TensorSpec(args[1].shape, args[1].dtype)
    traced = tf.function(call, input_signature=signature)
    eager = call(*args)
    staged = traced(*args)
    eager = eager if isinstance(eager, tuple) else (eager,)
    staged = staged if isinstance(staged, tuple) else (staged,)
    assert len(eager) == len(staged)
    for e, s in zip(eager, staged):
        assert e.dtype == s.dtype and e.shape == s.shape, name
        if name not in NON_DETERMINISTIC and e.dtype == tf.string:
            assert np.asarray(e.numpy()).tolist() == np.asarray(s.numpy()).tolist(), name
        elif name not in NON_DETERMINISTIC:
            wide = np.complex128 if e.dtype.is_complex else np.float64  # float64 would drop imaginary parts
            np.testing.assert_array_equal(np.asarray(e.numpy(), dtype=wide), np.asarray(s.numpy(), dtype=wide),
                                          err_msg=name)


@pytest.mark.parametrize("name", OP_NAMES)
def test_eager_matches_ember_function(name):
    _eager_matches_traced(name, unknown_dims=False)


def test_traced_partitioned_call_rejects_arguments_the_callee_was_not_traced_for():
    """Found by the op fuzzer: traced, the call was inlined with the caller's specs, and the callee's Mul read
    int8[4] (4 bytes) as float32[2] (8 bytes). Eagerly the call already raised."""
    square = tf.function(lambda x: x * x).get_concrete_function(tf.TensorSpec([2], tf.float32))
    call = tf.function(lambda t: _C.op("PartitionedCall")([t], square.name))
    for bad in (tf.constant([3, 4, 5, 6], tf.int8), tf.constant([1.0, 2.0, 3.0]), tf.constant(1.0)):
        with pytest.raises(errors.InvalidArgumentError, match="PartitionedCall.*argument 0 must be float32"):
            call(bad)
    np.testing.assert_array_equal(call(tf.constant([3.0, 4.0])).numpy(), [9.0, 16.0])


def test_fused_elementwise_example_is_sin_of_product():
    inputs, attrs = EXAMPLES["FusedElementwise"]
    got = _C.op("FusedElementwise")(*inputs, *attrs)
    np.testing.assert_allclose(got.numpy(), np.sin(F * F), rtol=1e-6)


def test_fused_reduction_example_is_row_sums_of_sin_of_product():
    inputs, attrs = EXAMPLES["FusedReduction"]
    got = _C.op("FusedReduction")(*inputs, *attrs)
    np.testing.assert_allclose(got.numpy(), np.sin(F * F).sum(axis=-1), rtol=1e-6)


@pytest.mark.parametrize("name", [n for n in OP_NAMES if n not in ("PartitionedCall", "Const")])
def test_unknown_dims_and_symbolic_shape_operands_match_eager(name):
    _eager_matches_traced(name, unknown_dims=True)
