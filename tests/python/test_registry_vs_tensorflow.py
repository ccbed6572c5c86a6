"""Every op of ember's registry against TensorFlow 2.21's own kernel (tf.raw_ops), table-driven: the example
call of test_op_registry.py with its float and bool data replaced by random values (per-op domains below),
in float32 and float64, compared in dtype, shape and value, and, for differentiable ops, the gradient of a
random-weighted sum of the float outputs w.r.t. every float input (ember.GradientTape against
tf.GradientTape) and its second-order gradient. Also: every other dtype of each op's kernels, special values
(signed zeros, ties, infinities, NaN) through the elementwise ops, VARIANTS of attributes and shapes the one
example does not reach, the exception class of bad operands, and PrintV2's text. Random ops use
TensorFlow's Philox streams in ember too, so with equal seeds they are compared value for value. An op that
TensorFlow has no raw op for, or that only ember has, is listed in EXCLUDED with the reason;
test_every_op_is_compared_or_excluded keeps the table complete. Deliberate differences are strict xfails
with the reason (EXPECTED_DIFFERENCES, SPECIAL_VALUE_DIFFERENCES)."""
import importlib.util
import inspect
import os

import ml_dtypes
import numpy as np
import pytest
import tensorflow as real_tf

import ember as em
from ember import _C

import sys  # noqa: E402
sys.path.insert(0, __import__("os").path.dirname(__import__("os").path.abspath(__file__)))  # loaded by path too
import conv_op_examples  # noqa: E402

_spec = importlib.util.spec_from_file_location(
    "op_registry_examples_vs_tf", os.path.join(os.path.dirname(__file__), "test_op_registry.py"))
_registry = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(_registry)

# Ops not compared, and why.
EXCLUDED = {
    **{name: "needs a label SparseTensor in row-major order and lengths within the frames, which random draws are "
             "not; compared with TensorFlow through tf.nn and tf.compat.v1.nn (every attribute) in test_ctc_ops.py"
       for name in ("CTCLoss", "CTCGreedyDecoder", "CTCBeamSearchDecoder")},
    "CTCLossDense": "TensorFlow has no such op: it is TensorFlow 2's ctc_loss_dense (an HMM composed of TensorFlow "
                    "ops) as one kernel; compared with tf.nn.ctc_loss on dense labels in test_ctc_ops.py",
    "Placeholder": "graph-only: its kernel says it must be fed (test_function.py)",
    **{name: "calls the Python function an ember trace registered under its token; compared with TensorFlow's "
             "tf.py_function / tf.numpy_function in test_py_function.py" for name in (
        "EagerPyFunc", "PyFunc", "PyFuncStateless")},
    "_FusedMatMul": "tf.raw_ops has no _FusedMatMul (a grappler op); compared with TensorFlow running it from a "
                    "GraphDef, and with the unfused graph, in test_fuse_matmul.py",
    "RaggedTensorToTensorGrad": "ember's adjoint of RaggedTensorToTensor; TensorFlow has no such op (its gradient "
                                "is checked in test_ragged.py and tests/cpp/ops/ragged_test.cc)",
    "PartitionedCall": "calls a traced ember function by name; TensorFlow's needs a FunctionDef "
                       "(GraphDef round trips in test_graph_def_tf.py run it in TensorFlow)",
    **{name: "calls traced ember functions by name; TensorFlow's needs FunctionDefs (compared with "
              "TensorFlow's tf.cond/tf.while_loop/tf.switch_case in test_control_flow.py)"
       for name in ("If", "StatelessIf", "Case", "StatelessCase", "While", "StatelessWhile")},
    **{name: "TensorFlow's TensorList ops take and return DT_VARIANT handles, ember's dense lists (Note "
              "[TensorLists as dense tensors]); TensorFlow's graphs holding them run in ember in "
              "test_control_flow_graph_def.py"
       for name in ("TensorListReserve", "EmptyTensorList", "TensorListFromTensor", "TensorListGetItem",
                    "TensorListSetItem", "TensorListPushBack", "TensorListPopBack", "TensorListStack",
                    "TensorListLength", "TensorListElementShape")},
    "Assert": "its data's text sits in a template attribute (GraphDef export writes TensorFlow's layout), "
              "TensorFlow's data is a list of tensors; compared with tf.debugging.Assert in test_debugging.py",
    **{name: "iterates a dataset of the ember.data package, named by number; TensorFlow's iterator ops take "
             "variant and resource tensors (datasets compared with tf.data in test_data*.py)"
       for name in ("DatasetIteratorCreate", "DatasetIteratorNext", "DatasetIteratorDelete")},
    **{name: "writes through the summary writer default when it runs (docs/summary.md), where TensorFlow's "
              "WriteSummary/FlushSummaryWriter take a writer resource; event files compared with TensorFlow's "
              "in test_summary.py" for name in ("ContextWriteSummary", "ContextFlushSummary")},
    **{name: "a collective across worker processes (a group of one is the identity); checked against "
             "one-process training in test_multi_worker.py"
       for name in ("CollectiveReduceV2", "CollectiveGatherV2", "CollectiveBcastSendV2", "CollectiveBcastRecvV2")},
    "FusedElementwise": "ember-internal: written by ember's fusion pass, no TensorFlow op",
    **{name: "ember-internal: the asynchronous all-reduce that overlaps a gradient bucket's reduction with the "
             "backward pass (MultiWorkerMirroredStrategy; test_distribute_overlap.py, test_multi_worker.py)"
       for name in ("_CollectiveReduceStart", "_CollectiveReduceDone")},
    "FusedReduction": "ember-internal: written by ember's fusion pass, no TensorFlow op",
    **{name: "ember-internal: written by the partitioner of multi-device functions, run only inside their "
             "partitions (test_multi_device_function.py)" for name in ("_Send", "_Recv")},
    "Polygamma": "its order (input 0) must be a non-negative integer, which the random float draws of this table "
                 "are not; compared with tf.math.polygamma in test_special_math.py",
    "ReadVariableOp": "reads an ember variable named by its id attribute; TensorFlow's takes a resource "
                      "handle (variables compared in test_variables.py)",
    "AssignVariableOp": "writes an ember variable named by its id attribute (see ReadVariableOp)",
    "AssignAddVariableOp": "writes an ember variable named by its id attribute (see ReadVariableOp)",
    "AssignSubVariableOp": "writes an ember variable named by its id attribute (see ReadVariableOp)",
    **{name: "writes an ember variable named by its id attribute (see ReadVariableOp); compared with "
             "TensorFlow's Variable.scatter_* and raw ops on handles in test_variables_scatter.py"
       for name in ("ResourceScatterUpdate", "ResourceScatterAdd", "ResourceScatterSub", "ResourceScatterMul",
                    "ResourceScatterDiv", "ResourceScatterMin", "ResourceScatterMax", "ResourceScatterNdUpdate",
                    "ResourceScatterNdAdd", "ResourceScatterNdSub", "ResourceScatterNdMin", "ResourceScatterNdMax")},
    "StatefulRandomBinomial": "reads and advances an ember variable named by its id attribute (see "
                              "ReadVariableOp); compared with TensorFlow's Generator.binomial in "
                              "test_random_generator.py",
    "RngReadAndSkip": "reads and advances an ember variable named by its id attribute (see ReadVariableOp); "
                      "compared with TensorFlow's tf.random.Generator in test_random_generator.py",
    **{name: "works on an ember lookup table named by its id attribute (see ReadVariableOp); TensorFlow's "
             "takes a table resource handle (tables compared with tf.lookup in test_lookup.py)"
       for name in ("LookupTableFindV2", "LookupTableInsertV2", "LookupTableRemoveV2", "LookupTableSizeV2",
                    "LookupTableExportV2", "LookupTableImportV2", "InitializeTableV2",
                    "InitializeTableFromTextFileV2")},
    **{name: "returns the id of the ember lookup table it makes, where TensorFlow's returns a resource "
             "handle; compared with TensorFlow's graphs in test_saved_model_tables.py"
       for name in ("HashTableV2", "MutableHashTableV2", "MutableDenseHashTableV2")},
    **conv_op_examples.EXCLUDED,
    **{name: "takes string tensors, which this table's random numbers are not; compared with TensorFlow's "
             "tf.strings and raw ops in test_strings.py"
       for name in ("StringLength", "StringJoin", "ReduceJoin", "StringToNumber", "RegexReplace",
                    "StaticRegexReplace", "RegexFullMatch", "StaticRegexFullMatch", "Substr", "StringUpper",
                    "StringLower", "StringStrip", "StringSplitV2", "StringToHashBucketFast", "UnicodeDecode")},
    **{name: "takes string tensors, which this table's random numbers are not; compared with TensorFlow's "
             "tf.io functions and raw ops in test_strings_bytes.py"
       for name in ("DecodeRaw", "DecodePaddedRaw", "EncodeBase64", "DecodeBase64")},
    "Timestamp": "reads the clock, so no two calls agree; compared with tf.timestamp in test_print.py",
    **{name: "its float inputs are boxes in [0, 1] and its type variable is the image size's integer type, "
              "which this table's draws do not keep apart; compared with TensorFlow (stateless boxes value for "
              "value, stateful streams across calls, errors) in test_image_sample_box.py"
       for name in ("SampleDistortedBoundingBoxV2", "StatelessSampleDistortedBoundingBox")},
    **{name: "takes float32 and float16 images only and boxes whose pixels it draws: compared with "
              "tf.image.draw_bounding_boxes pixel for pixel (depths, colours, boxes across every edge) in "
              "test_image_draw_and_jpeg_quality.py" for name in ("DrawBoundingBoxes", "DrawBoundingBoxesV2")},
    "UnicodeTranscode": "takes string tensors, which this table's random numbers are not; compared with "
                        "tf.strings.unicode_transcode on random ill-formed strings in test_strings_transcode.py",
    **{name: "reads or writes a file named by a string tensor; compared with tf.io.read_file / write_file "
             "(contents, errors, program order) in test_file_io.py" for name in ("ReadFile", "WriteFile")},
    **{name: "reads or writes WAV files held in string tensors; compared with tf.audio (bytes, decodes, corrupt "
             "files) in test_audio.py" for name in ("DecodeWav", "EncodeWav")},
    **{name: "reads or writes image files held in string tensors; compared with tf.io's codecs (pixels bit for "
             "bit, errors, damaged files) in test_image_codec_ops.py and tests/fuzz/test_image_fuzz.py"
       for name in ("DecodeJpeg", "DecodeAndCropJpeg", "EncodeJpeg", "EncodeJpegVariableQuality", "ExtractJpegShape", "DecodePng", "EncodePng",
                    "DecodeGif", "DecodeBmp", "DecodeImage")},
    "DecodeCSV": "parses CSV records held in string tensors, which random draws are not: compared with "
                 "tf.io.decode_csv on random records in test_decode_csv.py",
    **{name: "takes set operands whose values repeat within rows, which random draws rarely do: compared with "
             "tf.sets on random sets of every dtype, dense and sparse, in test_sets.py"
       for name in ("SetSize", "DenseToDenseSetOperation", "DenseToSparseSetOperation",
                    "SparseToSparseSetOperation")},
    "ParseExampleV2": "parses tf.train.Example records, which random draws are not: compared with "
                      "tf.io.parse_example in test_parse_example.py",
    "ParseSequenceExampleV2": "parses tf.train.SequenceExample records, which random draws are not: compared "
                              "with tf.io.parse_sequence_example in test_parse_example.py",
    **{name: "returns a string tensor; compared with tf.strings.format / tf.strings.as_string / "
             "tf.strings.unicode_encode in test_strings.py"
       for name in ("StringFormat", "AsString", "UnicodeEncode")},
    **{name: "takes or returns complex values, which this table's real draws and real gradient weights do not "
             "cover (its float64 run would compare complex64 data at float64 tolerance); compared with "
             "TensorFlow (values, fft_length crops and pads, gradients, eager and staged) in test_complex.py and "
             "test_fft.py" for name in ("Complex", "Real", "Imag", "Conj", "ComplexAbs", "Angle", "FFT", "IFFT",
                                        "FFT2D", "IFFT2D", "FFT3D", "IFFT3D", "RFFT", "IRFFT", "RFFT2D",
                                        "IRFFT2D", "RFFT3D", "IRFFT3D")},
    **{name: "needs invertible or positive definite matrices, which this table's random draws are not; "
             "compared with tf.linalg (values, gradients, batches, errors) in test_linalg.py"
       for name in ("MatrixInverse", "MatrixDeterminant", "LogMatrixDeterminant", "Cholesky", "MatrixSolve",
                    "MatrixTriangularSolve")},
    **{name: "its vectors are defined up to sign, so values are compared through invariants (reconstruction, "
             "|v|, sign-invariant losses' gradients) with tf.linalg in test_linalg.py"
       for name in ("SelfAdjointEigV2", "Qr", "Svd")},
    "Eig": "its eigenvalue order and vector phases are LAPACK geev's, TensorFlow's Eigen's; compared as sets, up "
           "to phase and through order- and phase-invariant losses' gradients with tf.linalg.eig in "
           "test_linalg_eig_lu.py",
    "MatrixSquareRoot": "random real matrices often have a negative eigenvalue and no real root (NaN in both), "
                        "where TensorFlow's gradient solve raises; compared on matrices with a root (values, "
                        "gradients, special matrices) in test_linalg_schur.py",
    "MatrixLogarithm": "takes complex matrices only, which this table's real draws are not; compared with "
                       "tf.linalg.logm (values, batches, special matrices) in test_linalg_schur.py",
}

OP_NAMES = sorted(_C.op_names())
INFO = {name: _C.op_info(name) for name in OP_NAMES}
COMPARED = [name for name in OP_NAMES if name not in EXCLUDED]

# ember's op names that TensorFlow spells otherwise (as graph_def_ops.cc writes them).
TF_OP_NAMES = {"Add": "AddV2"}
# ember attribute -> the keyword of tf.raw_ops.<Name> where they differ.
TF_ATTR_NAMES = {("Squeeze", "squeeze_dims"): "axis"}

# Where each float input's random values are drawn from (default: DEFAULT_DOMAIN), per op and input index:
# away from poles and inside the function's domain, so both sides compute the same well-conditioned value.
DEFAULT_DOMAIN = (-2.0, 2.0)
POSITIVE = (0.1, 2.0)
NONZERO = "nonzero"  # |x| in [0.5, 2], either sign
DISTRIBUTION = "distribution"  # rows (last axis) of positive numbers summing to 1
VALUE_RANGE = "value_range"  # [lo, hi] with lo < 0 < hi
DOMAINS = {
    "Log": {0: POSITIVE}, "Sqrt": {0: POSITIVE}, "Rsqrt": {0: POSITIVE}, "Log1p": {0: (-0.5, 2.0)},
    "Reciprocal": {0: NONZERO}, "Tan": {0: (-1.0, 1.0)}, "Pow": {0: POSITIVE},
    "RealDiv": {1: NONZERO}, "FloorDiv": {1: NONZERO}, "FloorMod": {1: NONZERO},
    "ClipByValue": {1: (-1.0, -0.5), 2: (0.5, 1.0)},
    "Asin": {0: (-0.9, 0.9)}, "Acos": {0: (-0.9, 0.9)}, "Atanh": {0: (-0.9, 0.9)}, "Erfinv": {0: (-0.9, 0.9)},
    "Acosh": {0: (1.1, 3.0)}, "Lgamma": {0: POSITIVE}, "Digamma": {0: (0.5, 3.0)}, "Atan2": {1: NONZERO},
    "Xlogy": {1: POSITIVE}, "Xlog1py": {1: (-0.5, 2.0)},
    # The special functions (ops/special_functions.cc): inside their domains, away from the poles at 0.
    **{name: {0: POSITIVE} for name in ("BesselY0", "BesselY1", "BesselK0", "BesselK0e", "BesselK1", "BesselK1e",
                                        "Expint", "Spence")},
    "Ndtri": {0: (0.05, 0.95)}, "Zeta": {0: (1.5, 4.0), 1: POSITIVE},
    **{name: {0: POSITIVE, 1: POSITIVE} for name in ("Igamma", "Igammac", "IgammaGradA")},
    "Betainc": {0: POSITIVE, 1: POSITIVE, 2: (0.05, 0.95)},
    # TensorFlow's logits gradient assumes labels that are distributions (Note [Cross-entropy gradients])
    "SoftmaxCrossEntropyWithLogits": {1: DISTRIBUTION},
    # TensorFlow's (y, dy) gradient ops: y is Sqrt's, Rsqrt's or Reciprocal's output, so positive here.
    "SqrtGrad": {0: POSITIVE}, "RsqrtGrad": {0: POSITIVE}, "ReciprocalGrad": {0: NONZERO},
    "HistogramFixedWidth": {1: VALUE_RANGE},
    **conv_op_examples.DOMAINS,
}
# Integer operands that must not be negative (TensorFlow: "Integers to negative integer powers are not allowed").
NONNEGATIVE_INTEGERS = {("Pow", 1)}
# Tolerances of value and gradient comparisons (relative and absolute, the same number); exact for the others.
TOLERANCE = {np.dtype(np.float32): 2e-5, np.dtype(np.float64): 1e-12, np.dtype(ml_dtypes.bfloat16): 1.6e-2,
             np.dtype(np.float16): 2e-3, np.dtype(np.complex64): 2e-5, np.dtype(np.complex128): 1e-12}
EMBER_DTYPES = {d.name: d for d in (em.float16, em.bfloat16, em.float32, em.float64, em.int8, em.int16, em.int32,
                                    em.int64, em.uint8, em.bool, em.complex64, em.complex128)}
# (op, dtype) pairs whose values or gradients differ from TensorFlow's on purpose, or for a reason too big
# to fix here: strict xfails, so a fix shows up.
LABELS_GRADIENT = ("TensorFlow's gradient w.r.t. the labels is -dloss * log_softmax(logits): it leaves out the "
                   "gradient arriving at the backprop output (d backprop / d labels = -1), which ember adds "
                   "(Note [Cross-entropy gradients] in src/ember/ops/nn.cc); "
                   "test_softmax_xent_labels_gradient_is_tensorflows_plus_the_backprop_term checks the difference")
EXPECTED_DIFFERENCES = {
    ("test_gradients_match_tensorflow", "SoftmaxCrossEntropyWithLogits", "float32"): LABELS_GRADIENT,
    ("test_gradients_match_tensorflow", "SoftmaxCrossEntropyWithLogits", "float64"): LABELS_GRADIENT,
    ("test_values_match_tensorflow", "InTopKV2", "float64"): "TensorFlow's InTopKV2 takes float32 predictions "
                                                              "only, and so does ember's (both reject float64)",
    **{(test, "ApproxTopK", "float64"): "TensorFlow's ApproxTopK takes float16, bfloat16 and float32 only, and so "
                                        "does ember's (both reject float64)"
       for test in ("test_values_match_tensorflow", "test_gradients_match_tensorflow",
                    "test_second_order_gradients_match_tensorflow")},
    # The same rule differentiated again: TensorFlow's second-order gradient w.r.t. the labels is 0.
    ("test_second_order_gradients_match_tensorflow", "SoftmaxCrossEntropyWithLogits", "float64"): LABELS_GRADIENT,
    **conv_op_examples.EXPECTED_DIFFERENCES,
    # TensorFlow registers no gradient for SoftsignGrad (so none of second order for Softsign); ember's are
    # checked against finite differences by test_gradient_check.py.
    **{(test, "SoftsignGrad", d): "TensorFlow registers no gradient for SoftsignGrad"
       for test in ("test_gradients_match_tensorflow", "test_second_order_gradients_match_tensorflow")
       for d in ("float32", "float64")},
    ("test_second_order_gradients_match_tensorflow", "Softsign", "float64"):
        "TensorFlow registers no gradient for SoftsignGrad, so Softsign has no second-order gradient there",
    # TensorFlow registers no gradient for IgammaGradA (its tape raises LookupError); ember's rule raises
    # UnimplementedError (test_special_functions.py checks both), so neither side has these.
    **{(test, name, d): "TensorFlow registers no gradient for IgammaGradA, Igamma's and Igammac's gradient in a"
       for test, name, d in [("test_gradients_match_tensorflow", "IgammaGradA", "float32"),
                             ("test_gradients_match_tensorflow", "IgammaGradA", "float64"),
                             ("test_second_order_gradients_match_tensorflow", "IgammaGradA", "float64"),
                             ("test_second_order_gradients_match_tensorflow", "Igamma", "float64"),
                             ("test_second_order_gradients_match_tensorflow", "Igammac", "float64")]},
    # PreventGradient's gradient raises on both sides (TensorFlow's LookupError, ember's UnimplementedError;
    # test_ctc_ops.py checks both through ctc_loss).
    **{(test, "PreventGradient", d): "PreventGradient's gradient raises, in TensorFlow and in ember"
       for test, d in [("test_gradients_match_tensorflow", "float32"), ("test_gradients_match_tensorflow", "float64"),
                       ("test_second_order_gradients_match_tensorflow", "float64")]},
}


def _np(x):
    if isinstance(x, list):
        return [_np(v) for v in x]
    if isinstance(x, em.Tensor):
        return x.numpy()
    return x


def _case(name, dtype, rng, example=None):
    """(inputs as NumPy arrays or lists of them, attrs) of the op's example (test_op_registry.py's, or the
    one given), with float data cast to `dtype` and drawn at random, bool data drawn at random; int operands
    (axes, shapes, indices) kept."""
    inputs, attrs = example or _registry.EXAMPLES[name]
    domains = DOMAINS.get(name, {})

    def draw(i, x):
        if isinstance(x, list):
            return [draw(i, v) for v in x]
        x = _np(x)
        if x.dtype == np.float32:
            domain = domains.get(i, DEFAULT_DOMAIN)
            if domain == NONZERO:
                v = rng.uniform(0.5, 2.0, x.shape) * rng.choice([-1.0, 1.0], x.shape)
            elif domain == VALUE_RANGE:
                v = np.array([rng.uniform(-2.0, -0.5), rng.uniform(0.5, 2.0)])
            elif domain == DISTRIBUTION:
                v = rng.uniform(0.1, 1.0, x.shape)
                v /= v.sum(axis=-1, keepdims=True)
            else:
                v = rng.uniform(*domain, x.shape)
            if np.dtype(dtype) == np.bool_:
                return v > np.median(v)
            if np.dtype(dtype).kind == "c":  # a second draw for the imaginary parts
                return np.asarray(v + 1j * rng.uniform(*DEFAULT_DOMAIN, x.shape), dtype)
            if i in conv_op_examples.ALWAYS_FLOAT32.get(name, ()) or (
                    np.dtype(dtype).itemsize == 2 and i in conv_op_examples.FLOAT32_FOR_16BIT.get(name, ())):
                return np.asarray(v, np.float32)
            if np.dtype(dtype).kind in "iu":
                # Small integers of the domain's signs (no overflow in int8), never 0 where 0 is outside it.
                v = np.where(v < 0, np.floor(v * 2), np.ceil(v * 2))
                if np.dtype(dtype).kind == "u" or (name, i) in NONNEGATIVE_INTEGERS:
                    v = np.abs(v)
            return np.asarray(v, dtype)
        if x.dtype == np.bool_ and x.ndim:
            return rng.random(x.shape) < 0.5
        return x

    def attr(a):
        if a is em.float32:
            return EMBER_DTYPES[np.dtype(dtype).name]
        if isinstance(a, em.Tensor):
            return a.numpy().astype(dtype) if a.dtype == em.float32 else a.numpy()
        return a

    attrs = [attr(a) for a in attrs]
    if name == "IsotonicRegression":  # its output dtype follows the input's: int8/16 -> float32, int32/64 -> float64
        kind = np.dtype(dtype)
        attrs = [em.float32 if kind in (np.int8, np.int16) else em.float64 if kind.kind == "i" else attrs[0]]
    # A stateful random op continues the stream of its (op, attributes) in both frameworks (compared by
    # test_random_streams_continue_as_tensorflows): seeds no other call uses start both streams afresh.
    for k, attr_name in enumerate(INFO[name]["attrs"]):
        if attr_name in ("seed", "seed2"):
            attrs[k] = int(rng.integers(1 << 20, 1 << 30))
    return [draw(i, x) for i, x in enumerate(inputs)], attrs


def _ember_inputs(inputs):
    return [[em.constant(v) for v in x] if isinstance(x, list) else em.constant(x) for x in inputs]


def _tf_attr(a):
    if isinstance(a, em.DType):
        return real_tf.as_dtype(a.name)
    return a


def _tf_inputs(inputs):
    return [[real_tf.constant(v) for v in x] if isinstance(x, list) else real_tf.constant(x) for x in inputs]


def _tf_call(name, inputs, attrs):
    """TensorFlow's op on the same inputs and attributes; `inputs` are TensorFlow tensors."""
    attr_names = INFO[name]["attrs"]
    named = {a: _tf_attr(v) for a, v in zip(attr_names, attrs)}
    raw = getattr(real_tf.raw_ops, TF_OP_NAMES.get(name, name), None)
    if name == "Pad":  # ember's Pad carries its constant and mode: TensorFlow's PadV2 and MirrorPad
        if named["mode"] == "CONSTANT":
            value = np.asarray(named["constant_value"]).astype(inputs[0].dtype.as_numpy_dtype)
            return real_tf.raw_ops.PadV2(input=inputs[0], paddings=inputs[1], constant_values=value)
        return real_tf.raw_ops.MirrorPad(input=inputs[0], paddings=inputs[1], mode=named["mode"])
    if name == "Eye":  # no raw op: tf.eye builds it
        return real_tf.eye(named["num_rows"], None if named["num_columns"] < 0 else named["num_columns"],
                           named["batch_shape"] or None, named["dtype"])
    if name in ("Softmax", "LogSoftmax"):  # TensorFlow's raw ops have no axis (the last one): tf.nn's
        fn = real_tf.nn.softmax if name == "Softmax" else real_tf.nn.log_softmax
        return fn(inputs[0], axis=named["axis"])
    if name == "SigmoidCrossEntropyWithLogits":  # no raw op: tf.nn builds it
        return real_tf.nn.sigmoid_cross_entropy_with_logits(labels=inputs[0], logits=inputs[1])
    if name == "ReduceLogSumExp":  # no raw op: tf.reduce_logsumexp builds it
        return real_tf.reduce_logsumexp(inputs[0], inputs[1], keepdims=named["keep_dims"])
    if name == "RandomUniformInt":  # TensorFlow's bounds are inputs
        dtype = named.pop("dtype")
        return raw(shape=inputs[0], minval=real_tf.constant(named["minval"], dtype),
                   maxval=real_tf.constant(named["maxval"], dtype), seed=named["seed"], seed2=named["seed2"])
    if name == "StatelessRandomUniformInt":
        dtype = named.pop("dtype")
        return raw(shape=inputs[0], seed=inputs[1], minval=real_tf.constant(named["minval"], dtype),
                   maxval=real_tf.constant(named["maxval"], dtype))
    if name.endswith("V2") and "key" in INFO[name]["inputs"]:  # TensorFlow's key and counter are uint64
        key, counter, alg = (real_tf.bitcast(t, real_tf.uint64) if i < 2 else t for i, t in enumerate(inputs[1:4]))
        if name == "StatelessRandomUniformIntV2":
            dtype = named.pop("dtype")
            return raw(shape=inputs[0], key=key, counter=counter, alg=alg,
                       minval=real_tf.constant(named["minval"], dtype), maxval=real_tf.constant(named["maxval"], dtype))
        return raw(shape=inputs[0], key=key, counter=counter, alg=alg, dtype=named["dtype"])
    if name == "SplitV":  # TensorFlow's output count is an attribute
        named["num_split"] = int(inputs[1].shape[0])
    if name == "PrintV2":  # ember's formats its tensors into the template: TensorFlow's StringFormat + PrintV2
        text = real_tf.raw_ops.StringFormat(inputs=inputs[0], template=named["template"], placeholder="\x1f",
                                            summarize=named["summarize"])
        real_tf.raw_ops.PrintV2(input=text, output_stream=named["output_stream"], end=named["end"])
        return ()
    if name == "InplaceUpdate":  # TensorFlow registers no gradient for its raw InplaceUpdate: the same rows
        # written by TensorScatterUpdate, which has one
        return real_tf.tensor_scatter_nd_update(inputs[0], real_tf.expand_dims(inputs[1], 1), inputs[2])
    if name == "RaggedTensorToTensor":  # ember joins the partition kinds with commas ("": ROW_SPLITS each)
        kinds = named["row_partition_types"]
        named["row_partition_types"] = kinds.split(",") if kinds else ["ROW_SPLITS"] * len(inputs[3])
    if name == "EnsureShape":  # ember's shape attribute is TensorFlow's as dims (-1 unknown) and a flag
        unknown_rank = named.pop("unknown_rank")
        named["shape"] = None if unknown_rank else [None if d < 0 else d for d in named["shape"]]
    if name == "Const":  # an eager raw Const cannot take a tensor attribute: tf.constant makes one
        return real_tf.constant(named["value"])
    if name in LIST_OPS_ON_DENSE_LISTS:
        return _tf_list_call(name, inputs, named)
    params = [p for p in inspect.signature(raw).parameters if p != "name"]
    kwargs = dict(zip(params, inputs))
    for a, v in named.items():
        kwargs[TF_ATTR_NAMES.get((name, a), a)] = v
    return raw(**kwargs)


# TensorList ops compared through TensorFlow's variant lists: ember's dense list operand goes in as
# TensorListFromTensor of it, a list result comes out as TensorListStack (Note [TensorLists as dense tensors]).
LIST_OPS_ON_DENSE_LISTS = {"TensorListGather", "TensorListScatter", "TensorListScatterV2",
                           "TensorListScatterIntoExistingList", "TensorListConcat", "TensorListConcatV2",
                           "TensorListSplit"}


def _tf_list_call(name, inputs, named):
    raw = real_tf.raw_ops

    def as_list(dense):
        return raw.TensorListFromTensor(tensor=dense, element_shape=real_tf.shape(dense)[1:])

    def as_dense(handle, dtype):
        return raw.TensorListStack(input_handle=handle, element_shape=-1, element_dtype=dtype)

    if name == "TensorListGather":
        return raw.TensorListGather(input_handle=as_list(inputs[0]), indices=inputs[1], element_shape=inputs[2],
                                    element_dtype=inputs[0].dtype)
    if name == "TensorListScatter":
        return as_dense(raw.TensorListScatter(tensor=inputs[0], indices=inputs[1], element_shape=inputs[2]),
                        inputs[0].dtype)
    if name == "TensorListScatterV2":
        return as_dense(raw.TensorListScatterV2(tensor=inputs[0], indices=inputs[1], element_shape=inputs[2],
                                                num_elements=inputs[3]), inputs[0].dtype)
    if name == "TensorListScatterIntoExistingList":
        return as_dense(raw.TensorListScatterIntoExistingList(input_handle=as_list(inputs[0]), tensor=inputs[1],
                                                              indices=inputs[2]), inputs[0].dtype)
    if name == "TensorListConcat":
        return raw.TensorListConcat(input_handle=as_list(inputs[0]), element_dtype=inputs[0].dtype,
                                    element_shape=named["element_shape"] or None)
    if name == "TensorListConcatV2":
        return raw.TensorListConcatV2(input_handle=as_list(inputs[0]), element_shape=inputs[1],
                                      leading_dims=inputs[2], element_dtype=inputs[0].dtype)
    return as_dense(raw.TensorListSplit(tensor=inputs[0], element_shape=inputs[1], lengths=inputs[2]),
                    inputs[0].dtype)


def _flat(out):
    if isinstance(out, (tuple, list)):
        return [t for o in out for t in _flat(o)]
    return [out]


# Ops that ember runs in a dtype that TensorFlow's CPU kernels do not take (dtype -> ops).
TF_LACKS_DTYPE = {
    "float16": {"LinSpace", "Erfinv", "Rint", "Dawsn", "Expint", "FresnelCos", "FresnelSin", "Spence", "Ndtri",
                "Igamma", "Igammac", "IgammaGradA", "ResizeBicubicGrad"},
    "bfloat16": {"LinSpace", "Digamma", "Erfinv", "Lgamma", "Rint", "BesselI0", "BesselI0e", "BesselI1", "BesselI1e",
                 "BesselJ0", "BesselJ1", "BesselY0", "BesselY1", "BesselK0", "BesselK0e", "BesselK1", "BesselK1e",
                 "Dawsn", "Expint", "FresnelCos", "FresnelSin", "Spence", "Ndtri", "Igamma", "Igammac", "IgammaGradA",
                 "ResizeBicubicGrad"},
    "int8": {"SquaredDifference"}, "int16": {"SquaredDifference"}, "uint8": {"SquaredDifference", "Pow"},
}


def _compare(what, ours, theirs, dtype, atol=None):
    ours, theirs = _flat(ours), _flat(theirs)
    assert len(ours) == len(theirs), f"{what}: {len(ours)} outputs, TensorFlow {len(theirs)}"
    tol = TOLERANCE.get(np.dtype(dtype), 0)
    for k, (o, t) in enumerate(zip(ours, theirs)):
        assert o.dtype.name == t.dtype.name, f"{what} output {k}: dtype {o.dtype.name}, TensorFlow {t.dtype.name}"
        assert list(o.shape) == list(t.shape), f"{what} output {k}: shape {o.shape}, TensorFlow {t.shape}"
        a, b = np.asarray(o.numpy()), np.asarray(t.numpy())
        if a.dtype.kind in "fc" or a.dtype == ml_dtypes.bfloat16:
            wide = np.complex128 if a.dtype.kind == "c" else np.float64
            a, b = a.astype(wide), b.astype(wide)
            np.testing.assert_allclose(a, b, rtol=tol, atol=tol if atol is None else atol, equal_nan=True,
                                       err_msg=f"{what} output {k}")
        else:
            np.testing.assert_array_equal(a, b, err_msg=f"{what} output {k}")


def _params(test, names, dtypes=lambda name: (np.float32, np.float64)):
    out = []
    for name in names:
        for dtype in dtypes(name):
            reason = EXPECTED_DIFFERENCES.get((test, name, np.dtype(dtype).name))
            marks = [pytest.mark.xfail(strict=True, reason=reason)] if reason else []
            out.append(pytest.param(name, dtype, marks=marks, id=f"{name}-{np.dtype(dtype).name}"))
    return out


def _other_dtypes(name):
    """The dtypes besides float32 and float64 of the op's kernels, where its example's float data (or float32
    dtype attribute) can take them."""
    inputs, attrs = _registry.EXAMPLES[name]
    flat = [v for x in inputs for v in (x if isinstance(x, list) else [x])]
    if not any(isinstance(v, em.Tensor) and v.dtype == em.float32 for v in flat) and em.float32 not in attrs:
        return []
    by_enum = {d._enum: d for d in EMBER_DTYPES.values()}
    # Strings (and dtypes this table does not draw) are compared in their own files (test_strings.py).
    names = [by_enum[e].name for e in INFO[name]["kernel_dtypes"] if e in by_enum]
    return [ml_dtypes.bfloat16 if n == "bfloat16" else np.dtype(n).type for n in names
            if n not in ("float32", "float64")]


def _seed(name, dtype):
    return sum(map(ord, name)) * 7 + np.dtype(dtype).itemsize


def test_every_op_is_compared_or_excluded():
    stale = sorted(set(EXCLUDED) - set(OP_NAMES))
    assert not stale, f"EXCLUDED lists ops the registry does not have: {stale}"
    missing = [n for n in COMPARED if n not in _registry.EXAMPLES]
    assert not missing, f"ops neither compared with TensorFlow (no example) nor in EXCLUDED: {missing}"


@pytest.mark.parametrize("name,dtype", _params("test_values_match_tensorflow", COMPARED))
def test_values_match_tensorflow(name, dtype):
    inputs, attrs = _case(name, dtype, np.random.default_rng(_seed(name, dtype)))
    ours = _C.op(name)(*_ember_inputs(inputs), *attrs)
    theirs = _tf_call(name, _tf_inputs(inputs), attrs)
    _compare(name, ours, theirs, dtype)


@pytest.mark.parametrize("name,dtype", _params("test_values_match_tensorflow_in_other_dtypes", COMPARED,
                                                _other_dtypes))
def test_values_match_tensorflow_in_other_dtypes(name, dtype):
    """float16, bfloat16, integers and bool, where TensorFlow has a kernel for the dtype too (where it has
    none, ember's extra dtype is tested by test_op_registry.py against itself)."""
    inputs, attrs = _case(name, dtype, np.random.default_rng(_seed(name, dtype)))
    ours = _C.op(name)(*_ember_inputs(inputs), *attrs)
    try:
        theirs = _tf_call(name, _tf_inputs(inputs), attrs)
    except (real_tf.errors.NotFoundError, real_tf.errors.InvalidArgumentError, TypeError) as e:
        if name not in TF_LACKS_DTYPE.get(np.dtype(dtype).name, ()):
            raise AssertionError(f"TensorFlow rejects {name} in {np.dtype(dtype).name}: {e}") from e
        return
    assert name not in TF_LACKS_DTYPE.get(np.dtype(dtype).name, ()), "TensorFlow runs it now: update the table"
    try:
        _compare(name, ours, theirs, dtype)
    except AssertionError:
        if np.dtype(dtype) not in (np.dtype(np.float16), np.dtype(ml_dtypes.bfloat16)):
            raise
        _at_least_as_accurate(name, inputs, attrs, ours, theirs, dtype)


def _at_least_as_accurate(name, inputs, attrs, ours, theirs, dtype):
    """A 16-bit result that differs from TensorFlow's beyond the tolerance passes only where it is as close to
    the float64 (or float32) result as TensorFlow's is. TensorFlow's 16-bit kernels round differently on different CPUs
    (oneDNN picks other convolution and batch-norm paths where the CPU has AVX-512 FP16/BF16): ember must not
    be the less accurate one."""
    def widened(to):
        cast = [[v.astype(to) if isinstance(v, np.ndarray) and v.dtype == dtype else v for v in x]
                if isinstance(x, list) else (x.astype(to) if isinstance(x, np.ndarray) and x.dtype == dtype else x)
                for x in inputs]
        wide_attrs = [em.as_dtype(np.dtype(to).name) if a is em.as_dtype(np.dtype(dtype).name) else a
                      for a in attrs]
        return _flat(_tf_call(name, _tf_inputs(cast), wide_attrs))

    try:
        exact = widened(np.float64)
    except real_tf.errors.InvalidArgumentError:  # kernels with no float64 (FusedBatchNormV3): float32
        exact = widened(np.float32)
    tol = TOLERANCE[np.dtype(dtype)]
    for k, (o, t, e) in enumerate(zip(_flat(ours), _flat(theirs), exact)):
        a, b, r = (np.asarray(x.numpy()).astype(np.float64) for x in (o, t, e))
        ours_error, theirs_error = np.abs(a - r), np.abs(b - r)
        worse = ours_error > theirs_error + tol * np.maximum(np.abs(r), 1.0)
        assert not worse.any(), (f"{name} output {k}: ember's {np.dtype(dtype).name} result is further from the "
                                 f"float64 result than TensorFlow's at {np.argwhere(worse)[:5].tolist()}")


def _float_slots(inputs, dtype):
    slots = []
    for i, x in enumerate(inputs):
        for j, v in (enumerate(x) if isinstance(x, list) else [(None, x)]):
            if isinstance(v, np.ndarray) and v.dtype == dtype:
                slots.append((i, j))
    return slots


def _assemble(inputs, slots, values, convert):
    args = [list(x) if isinstance(x, list) else x for x in inputs]
    for (i, j), v in zip(slots, values):
        if j is None:
            args[i] = v
        else:
            args[i][j] = v
    return [[v if not isinstance(v, np.ndarray) else convert(v) for v in a] if isinstance(a, list)
            else (convert(a) if isinstance(a, np.ndarray) else a) for a in args]


DIFFERENTIABLE = [n for n in COMPARED if INFO[n]["differentiable"]]


def _gradients(name, dtype, example=None, seed=0):
    """(ember's gradients, TensorFlow's, the float inputs, the weights of the outputs) of a random-weighted
    sum of the op's float outputs w.r.t. its float inputs."""
    rng = np.random.default_rng(_seed(name, dtype) + 1 + seed)
    inputs, attrs = _case(name, dtype, rng, example)
    if name == "Cast":  # to the other float dtype: a cast to int has no gradient
        attrs = [em.float64 if dtype == np.float32 else em.float32]
    slots = _float_slots(inputs, dtype)
    assert slots, f"{name} is differentiable but its example has no float input"
    base = [inputs[i] if j is None else inputs[i][j] for i, j in slots]
    probe = _flat(_C.op(name)(*_ember_inputs(inputs), *attrs))
    weights = [rng.uniform(-1, 1, o.shape).astype(dtype) if o.dtype.is_floating else None for o in probe]

    xs = [em.constant(b) for b in base]
    with em.GradientTape() as tape:
        tape.watch(xs)
        outs = _flat(_C.op(name)(*_assemble(inputs, slots, xs, em.constant), *attrs))
        loss = em.add_n([em.reduce_sum(o * w) for o, w in zip(outs, weights) if w is not None])
    ours = tape.gradient(loss, xs)

    txs = [real_tf.constant(b) for b in base]
    with real_tf.GradientTape() as tape:
        tape.watch(txs)
        outs = _flat(_tf_call(name, _assemble(inputs, slots, txs, real_tf.constant), attrs))
        loss = real_tf.add_n([real_tf.reduce_sum(o * w) for o, w in zip(outs, weights) if w is not None])
    theirs = tape.gradient(loss, txs)
    ours = [np.zeros_like(b) if o is None else o.numpy() for b, o in zip(base, ours)]
    theirs = [np.zeros_like(b) if t is None else real_tf.convert_to_tensor(t).numpy()  # IndexedSlices
              for b, t in zip(base, theirs)]
    return ours, theirs, base, weights


@pytest.mark.parametrize("name,dtype", _params("test_gradients_match_tensorflow", DIFFERENTIABLE))
def test_gradients_match_tensorflow(name, dtype):
    ours, theirs, _, _ = _gradients(name, dtype)
    tol = TOLERANCE[np.dtype(dtype)]
    for k, (o, t) in enumerate(zip(ours, theirs)):
        np.testing.assert_allclose(o, t, rtol=tol, atol=tol, err_msg=f"{name}: gradient of float input {k}")


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_softmax_xent_labels_gradient_is_tensorflows_plus_the_backprop_term(dtype):
    ours, theirs, _, weights = _gradients("SoftmaxCrossEntropyWithLogits", dtype)
    tol = TOLERANCE[np.dtype(dtype)]
    np.testing.assert_allclose(ours[0], theirs[0], rtol=tol, atol=tol, err_msg="logits")
    # weights[1] is the gradient arriving at backprop = softmax(logits) - labels.
    np.testing.assert_allclose(ours[1], theirs[1] - weights[1], rtol=tol, atol=tol, err_msg="labels")
    ours, theirs = _second_order("SoftmaxCrossEntropyWithLogits", dtype)
    np.testing.assert_allclose(ours[0], theirs[0], rtol=tol, atol=tol, err_msg="second order, logits")


# Values where elementwise kernels take their special paths: signed zeros, halves (rounding ties), poles,
# overflow, infinities and NaN.
SPECIAL_VALUES = [0.0, -0.0, 0.5, -0.5, 1.5, -2.5, 2.5, 1.0, -1.0, 3.0, 1e-30, 88.0, -88.0, 100.0, -100.0, 1e30,
                  -1e30, np.inf, -np.inf, np.nan]
ELEMENTWISE = [n for n in _registry.UNARY_FLOAT + _registry.BINARY_NUMERIC if n in COMPARED] + ["Cast"]
HUGE_ANGLES = ("ember's sin and cos reduce their argument accurately for |x| < ~1e8 only (the ACCURACY note in "
               "src/ember/kernels/vmath.h: a vectorised reduction); beyond, the result lies in [-1, 1] but is not "
               "sin(x). TensorFlow reduces exactly")
def _subnormals(dtype):
    """A subnormal of each sign, which both read as zero under FTZ/DAZ (docs/subnormals.md)."""
    if not np.issubdtype(np.dtype(dtype), np.floating):
        return []
    tiny = float(np.finfo(dtype).tiny) / 1024
    return [tiny, -tiny]


# Ops whose TensorFlow kernels answer subnormal inputs in ways ember does not reproduce (docs/subnormals.md):
# their special-value test runs without subnormals, and each is a strict xfail of test_subnormal_differences.
SUBNORMAL_DIFFERENCES = {
    **{("Relu", d): "TensorFlow's relu of a negative subnormal is +0 in its vectorised loop and -0 in its scalar "
                    "tail (these few values); ember gives +0 everywhere" for d in ("float32", "float64")},
    ("Log", "float32"): "TensorFlow's float32 log of a subnormal is -inf in its vectorised loop (log of the 0 DAZ "
                        "reads) and -103.97 (log 2^-150) in its scalar tail (these few values); ember gives -inf",
    ("Lgamma", "float32"): "TensorFlow's float32 lgamma of any subnormal is 103.97 (-log 2^-150); ember computes "
                           "it in double from the 0 DAZ reads: inf",
    ("BesselY1", "float32"): "TensorFlow's float32 Y1 of a subnormal is NaN (as at 0); ember reads it as 0 (DAZ) "
                             "and gives -inf",
    ("Expint", "float32"): "TensorFlow's float32 Ei of a positive subnormal is -103.39 (log of it) and of a "
                           "negative one NaN; ember reads both as 0 (DAZ): -inf",
    **{("Pow", d): "TensorFlow's pow keeps a subnormal base (pow(x, 1) == x) but reads a subnormal exponent as "
                   "0 (pow(-1, y) == 1); ember's pow gives pow(x, 1) == 0 and pow(-1, y) NaN"
       for d in ("float32", "float64")},
    **{("Atan2", d): "TensorFlow's atan2 with a subnormal operand answers as if the operands had equal magnitude "
                     "(atan2(0, 1e-41) == pi/4); ember gives atan2 of the zeros DAZ reads (0)"
       for d in ("float32", "float64")},
}


# Special values where ember's result differs from TensorFlow's on purpose: (op, dtype) -> (values, reason).
# They are left out of test_special_values_match_tensorflow and each is a strict xfail of
# test_special_value_differences.
SPECIAL_VALUE_DIFFERENCES = {
    ("Sin", "float32"): ([1e30, -1e30], HUGE_ANGLES), ("Sin", "float64"): ([1e30, -1e30], HUGE_ANGLES),
    ("Cos", "float32"): ([1e30, -1e30], HUGE_ANGLES), ("Cos", "float64"): ([1e30, -1e30], HUGE_ANGLES),
    ("Erf", "float64"): ([np.inf, -np.inf], "TensorFlow 2.21's float64 Erf gives NaN at +-inf; ember gives "
                                            "+-1, erf's limits (as TensorFlow's own float32 Erf does)"),
    **{("Erfinv", d): ([1e-30], "TensorFlow 2.21's Erfinv gives 0 for tiny x; ember gives x * sqrt(pi) / 2 "
                                "(8.86e-31 here), the value to working precision") for d in ("float32", "float64")},
    # Cephes (TensorFlow's kernels) reduces the phase of J and Y inexactly: its J0(1e30) is 5e-16, the true
    # value -8e-16 (mpmath); ember's (Boost's) are right (test_special_functions.py checks them with mpmath).
    **{(name, d): ([1e30, -1e30], "TensorFlow's J and Y at 1e30 are off (Cephes' phase reduction); ember's are "
                                  "the values mpmath gives")
       for name in ("BesselJ0", "BesselJ1", "BesselY0", "BesselY1") for d in ("float32", "float64")
       if (name, d) != ("BesselY1", "float32")},
    **{("Dawsn", d): ([-1e30], "TensorFlow's Dawsn has the wrong sign below x = -1e8; ember's is odd, as SciPy's")
       for d in ("float32", "float64")},
    ("BesselY1", "float32"): ([0.0, -0.0, 1e30, -1e30], "TensorFlow's float32 Y1(+-0) is NaN where its float64 "
                                                        "one is -inf; ember gives -inf, the limit, in every dtype"),
}


def _special_inputs(name, values):
    if len(INFO[name]["inputs"]) == 1:
        return [values]
    return [np.repeat(values, values.size), np.tile(values, values.size)]


def _compare_special(name, inputs, dtype):
    attrs = [em.int32] if name == "Cast" else []
    with np.errstate(all="ignore"):
        ours = _C.op(name)(*_ember_inputs(inputs), *attrs)
        theirs = _tf_call(name, _tf_inputs(inputs), attrs)
    # Relative, and absolutely up to the smallest normal: results below it are flushed to zero in both, and an
    # intermediate that flushes in one algorithm may not exist in the other.
    _compare(name, ours, theirs, dtype, atol=np.finfo(dtype).tiny)
    a, b = ours.numpy(), theirs.numpy()
    zeros = (a == 0) & (b == 0)
    differ = [tuple(float(x[zeros][k]) for x in inputs)
              for k, (s, t) in enumerate(zip(np.signbit(a[zeros]), np.signbit(b[zeros]))) if s != t]
    assert not differ, f"{name}: the signs of zero results differ from TensorFlow's at inputs {differ}"


@pytest.mark.parametrize("name,dtype", _params("test_special_values_match_tensorflow", ELEMENTWISE))
def test_special_values_match_tensorflow(name, dtype):
    """Every special value (every pair of them, for binary ops) through both kernels: equal values, NaN
    where TensorFlow gives NaN, and the sign of every zero."""
    left_out = SPECIAL_VALUE_DIFFERENCES.get((name, np.dtype(dtype).name), ([], ""))[0]
    subnormals = [] if (name, np.dtype(dtype).name) in SUBNORMAL_DIFFERENCES else _subnormals(dtype)
    values = np.array([v for v in SPECIAL_VALUES + subnormals if v not in left_out], dtype)
    _compare_special(name, _special_inputs(name, values), dtype)


@pytest.mark.parametrize("name,dtype", [
    pytest.param(name, np.dtype(dtype).type, marks=pytest.mark.xfail(strict=True, reason=reason), id=f"{name}-{dtype}")
    for (name, dtype), (_, reason) in SPECIAL_VALUE_DIFFERENCES.items()])
def test_special_value_differences(name, dtype):
    values = np.array(SPECIAL_VALUE_DIFFERENCES[(name, np.dtype(dtype).name)][0], dtype)
    _compare_special(name, _special_inputs(name, values), dtype)


@pytest.mark.parametrize("name,dtype", [
    pytest.param(name, np.dtype(dtype).type, marks=pytest.mark.xfail(strict=True, reason=reason), id=f"{name}-{dtype}")
    for (name, dtype), reason in SUBNORMAL_DIFFERENCES.items()])
def test_subnormal_differences(name, dtype):
    values = np.array(SPECIAL_VALUES + _subnormals(dtype), dtype)
    _compare_special(name, _special_inputs(name, values), dtype)


def _f(*shape):
    """A float32 operand of this shape (its values are drawn by _case)."""
    return em.zeros(shape, em.float32)


def _i(value):
    return em.constant(value, em.int32)


def _variants():
    """Calls beyond test_op_registry.py's one example per op: broadcasting, other attribute values, other
    ranks, negative axes, masks. op -> list of (inputs, attrs)."""
    binary = [([_f(2, 1, 3), _f(4, 1)], []), ([_f(3), _f(2, 3)], []), ([_f(2, 3), _f()], [])]
    table = {name: binary for name in _registry.BINARY_NUMERIC}
    for name in ["Sum", "Mean", "Prod", "Max", "Min", "ReduceLogSumExp"]:
        table[name] = [([_f(2, 3, 4), _i([0, -1])], [True]), ([_f(2, 3, 4), _i([])], [False]),
                       ([_f(2, 3), _i(-2)], [False]), ([_f(2, 3, 4), _i([2, 0, 1])], [False])]
    table["ArgMax"] = [([_f(2, 3, 4), _i(-1)], [em.int32]), ([_f(5), _i(0)], [em.int64])]
    table["ArgMin"] = [([_f(2, 3, 4), _i(1)], [em.int64])]
    table["Cumsum"] = [([_f(2, 3, 4), _i(a)], [e, r]) for a in (0, 2, -1) for e in (False, True) for r in (False, True)]
    table["Cumprod"] = table["Cumsum"]
    table["MatMul"] = [([_f(3, 2) if ta else _f(2, 3), _f(4, 3) if tb else _f(3, 4)], [ta, tb])
                       for ta in (False, True) for tb in (False, True)]
    table["Transpose"] = [([_f(2, 3, 4), _i([2, 0, 1])], []), ([_f(2, 3, 4, 1), _i([3, 1, 0, 2])], [])]
    table["ExpandDims"] = [([_f(2, 3), _i(-1)], []), ([_f(2, 3), _i(1)], [])]
    table["Squeeze"] = [([_f(1, 2, 1, 3, 1)], [[]]), ([_f(1, 2, 1, 3, 1)], [[-1, 0]])]
    table["Reshape"] = [([_f(2, 3, 4), _i([4, -1, 2])], []), ([_f(2, 3), _i([6])], [])]
    table["ConcatV2"] = [([[_f(2, 3), _f(2, 1), _f(2, 2)], _i(1)], []), ([[_f(2, 3), _f(1, 3)], _i(-2)], [])]
    table["Pack"] = [([[_f(2, 3), _f(2, 3), _f(2, 3)]], [-1]), ([[_f(2, 3), _f(2, 3)]], [0])]
    table["Unpack"] = [([_f(2, 3, 4)], [3, 1]), ([_f(2, 3, 4)], [4, -1])]
    table["SplitV"] = [([_f(2, 6), _i([1, -1, 2]), _i(-1)], []), ([_f(4, 3), _i([4]), _i(0)], [])]
    table["Tile"] = [([_f(2, 1, 3), _i([1, 3, 2])], [])]
    table["BroadcastTo"] = [([_f(3, 1), _i([2, 3, 4])], []), ([_f(), _i([2, 2])], [])]
    table["Pad"] = [([_f(3, 4), _i([[2, 1], [1, 3]])], [0.0, "REFLECT"]),
                    ([_f(3, 4), _i([[2, 1], [1, 3]])], [0.0, "SYMMETRIC"]),
                    ([_f(2, 3), _i([[0, 1], [2, 0]])], [-1.5, "CONSTANT"])]
    table["MirrorPadGrad"] = [([_f(6, 8), _i([[2, 1], [1, 3]])], ["REFLECT"]),
                              ([_f(6, 8), _i([[2, 1], [1, 3]])], ["SYMMETRIC"])]
    table["Slice"] = [([_f(3, 4, 5), _i([1, 0, 2]), _i([-1, 2, 3])], [])]
    table["StridedSlice"] = [
        ([_f(4, 5, 6), _i([3, 1, 0]), _i([0, 4, 6]), _i([-1, 2, 2])], [0, 0, 0, 0, 0]),  # negative stride
        ([_f(4, 5, 6), _i([1, 0, 0]), _i([3, 0, 0]), _i([1, 1, 1])], [4, 6, 0, 0, 0]),   # begin/end masks
        ([_f(4, 5, 6), _i([1, 2]), _i([2, 4]), _i([1, 1])], [0, 0, 0, 0, 1]),           # shrink axis 0
        ([_f(4, 5, 6), _i([0, 1]), _i([0, 3]), _i([1, 1])], [0, 0, 1, 0, 0]),           # ellipsis first
        ([_f(4, 5, 6), _i([0, 1, 0]), _i([0, 3, 0]), _i([1, 1, 1])], [0, 0, 0, 1, 0]),  # new axis first
        ([_f(4, 5, 6), _i([-3, -1]), _i([-1, -4]), _i([1, -1])], [0, 0, 0, 0, 0]),       # negative indices
    ]
    table["GatherV2"] = [([_f(4, 3, 2), _i([[1, 3], [0, 0]]), _i(-3)], [0]),
                         ([_f(4, 3, 2), _i([2, 0, 1, 2]), _i(1)], [0]),
                         ([_f(2, 4, 3), _i([[1, 0, 3], [2, 2, 0]]), _i(1)], [1])]
    table["UnsortedSegmentSum"] = [([_f(5, 2), _i([0, 2, 0, -1, 3]), _i(4)], []),
                                   ([_f(2, 3, 2), _i([[1, 0, 1], [0, 0, 2]]), _i(3)], [])]
    table["Softmax"] = [([_f(2, 3, 4)], [1]), ([_f(5)], [0])]
    table["LogSoftmax"] = [([_f(2, 3, 4)], [-1]), ([_f(2, 3, 4)], [0])]
    table["BiasAdd"] = [([_f(2, 3, 4, 5), _f(3)], ["NCHW"]), ([_f(2, 4, 3), _f(3)], ["NHWC"])]
    table["SoftmaxCrossEntropyWithLogits"] = [([_f(4, 5), _f(4, 5)], [])]
    table["SparseSoftmaxCrossEntropyWithLogits"] = [([_f(4, 5), _i([4, 0, 2, 2])], [])]
    table["Where"] = [([em.zeros([2, 3, 2], em.bool)], []), ([em.zeros([5], em.bool)], [])]
    table["SelectV2"] = [([em.zeros([2, 1], em.bool), _f(2, 3), _f(3)], []),
                         ([em.zeros([3], em.bool), _f(), _f(2, 3)], [])]
    table["ClipByValue"] = [([_f(2, 3), _f(2, 3), _f(2, 3)], [])]
    table["OneHot"] = [([_i([[0, 2], [-1, 5]]), _i(4), em.constant(2.0), em.constant(-1.0)], [0]),
                       ([_i([1, 3]), _i(4), em.constant(2.0), em.constant(-1.0)], [1])]
    table["L2Loss"] = [([_f(3, 4, 2)], [])]
    table["AddN"] = [([[_f(2, 3)] * 4], []), ([[_f(3)]], [])]
    table["Einsum"] = [([[_f(2, 3, 4), _f(2, 4, 5)]], ["bij,bjk->bik"]),    # batched matmul
                       ([[_f(2, 1, 3, 4), _f(5, 4, 2)]], ["...ij,...jk->...ik"]),  # broadcast batch dims
                       ([[_f(3, 4), _f(2, 4)]], ["ij,kj->ki"]),           # transposed result
                       ([[_f(3, 3, 2)]], ["iij->ji"]),                    # a diagonal
                       ([[_f(4, 4)]], ["ii->"]),                          # trace
                       ([[_f(2, 3)]], ["ij->jii"]),                       # a repeated output label
                       ([[_f(2, 3), _f(4)]], ["ij,k->ikj"]),              # outer product
                       ([[_f(2, 3, 4)]], ["b...->..."]),                  # a reduction under '...'
                       ([[_f(2, 3), _f(3, 5)]], ["ij,jk->"]),             # everything summed
                       ([[_f(3, 2, 4), _f(2, 4)]], ["b...i,...i->b..."])]  # '...' after a label
    sp_idx = em.constant([[0, 1, 0], [1, 0, 2], [1, 2, 2], [1, 2, 3]], em.int64)
    sp_shape = em.constant([2, 3, 4], em.int64)
    table["SparseReduceSum"] = [([sp_idx, _f(4), sp_shape, _i(axes)], [keep])
                                for axes in ([0], [1, -1], [0, 1, 2], [], [2, 2]) for keep in (False, True)]
    table["MatrixDiagPartV3"] = [([_f(2, 3, 4), _i(k), _f()], [a]) for k in (2, -1, [-2, 1], [0, 3])
                                 for a in ("LEFT_RIGHT", "RIGHT_RIGHT")]
    table["MatrixDiagV3"] = [([_f(2, 3), _i(1), _i(-1), _i(-1), _f()], ["RIGHT_LEFT"]),
                             ([_f(2, 3, 4), _i([-1, 1]), _i(5), _i(-1), _f()], ["LEFT_LEFT"]),
                             ([_f(4), _i(-2), _i(6), _i(5), _f()], ["RIGHT_RIGHT"])]
    table["MatrixSetDiagV3"] = [([_f(2, 3, 4), _f(2, 3, 3), _i([-1, 1])], [a])
                                for a in ("LEFT_RIGHT", "RIGHT_LEFT", "LEFT_LEFT", "RIGHT_RIGHT")]
    table.update(conv_op_examples.variants(_f))
    return table


VARIANTS = _variants()
VARIANT_CASES = [pytest.param(name, k, id=f"{name}-{k}") for name in sorted(VARIANTS)
                 for k in range(len(VARIANTS[name]))]


@pytest.mark.parametrize("name,k", VARIANT_CASES)
def test_variants_match_tensorflow(name, k):
    """Values (and gradients, if the op has them) of the calls in VARIANTS, in float32 and float64."""
    for dtype in (np.float32, np.float64):
        inputs, attrs = _case(name, dtype, np.random.default_rng(_seed(name, dtype) + k), VARIANTS[name][k])
        ours = _C.op(name)(*_ember_inputs(inputs), *attrs)
        theirs = _tf_call(name, _tf_inputs(inputs), attrs)
        _compare(f"{name} variant {k} ({np.dtype(dtype).name})", ours, theirs, dtype)
        if not INFO[name]["differentiable"] or not _float_slots(inputs, dtype):
            continue
        ours, theirs, _, weights = _gradients(name, dtype, VARIANTS[name][k], seed=k)
        if name == "SoftmaxCrossEntropyWithLogits":  # LABELS_GRADIENT
            theirs[1] = theirs[1] - weights[1]
        tol = TOLERANCE[np.dtype(dtype)]
        for j, (o, t) in enumerate(zip(ours, theirs)):
            np.testing.assert_allclose(o, t, rtol=tol, atol=tol,
                                       err_msg=f"{name} variant {k} ({np.dtype(dtype).name}): gradient {j}")


@pytest.mark.parametrize("name", [n for n in COMPARED  # ops of a shape alone (streams of the others:
                                  if "seed2" in INFO[n]["attrs"] and INFO[n]["inputs"] == ["shape"]])
# test_random_generator.py)
def test_random_streams_continue_as_tensorflows(name):
    """Eagerly, each call of a stateful random op with the same attributes continues one Philox stream in
    TensorFlow (its kernel cache); ember's follow the same streams, whatever the shape of each call."""
    inputs, attrs = _case(name, np.float32, np.random.default_rng(_seed(name, np.float32) + 99))
    for shape in ([3], [2, 2], [5], [1]):
        shape = np.array(shape, np.int32)
        ours = _C.op(name)(*_ember_inputs([shape]), *attrs)
        theirs = _tf_call(name, _tf_inputs([shape]), attrs)
        _compare(f"{name} of shape {shape}", ours, theirs, np.float32)


def _int(v):
    return np.array(v, np.int32)


def _ones(*shape):
    return np.ones(shape, np.float32)


# Bad operands both frameworks reject at run time: (op, inputs, attrs).
ERROR_CASES = [
    ("FloorDiv", [_int([1, 2]), _int([0, 1])], []),
    ("FloorMod", [_int([1, 2]), _int([0, 1])], []),
    ("Pow", [_int([2, 2]), _int([-1, 1])], []),
    ("GatherV2", [_ones(3, 2), _int([3]), _int(0)], [0]),
    ("GatherV2", [_ones(3, 2), _int([-1]), _int(0)], [0]),
    ("Reshape", [_ones(2, 3), _int([4, -1])], []),
    ("MatMul", [_ones(2, 3), _ones(2, 3)], [False, False]),
    ("Add", [_ones(2, 3), _ones(2, 2)], []),
    ("Transpose", [_ones(2, 3), _int([0, 0])], []),
    ("ConcatV2", [[_ones(2, 3), _ones(3, 2)], _int(0)], []),
    ("Slice", [_ones(2, 3), _int([0, 2]), _int([1, 2])], []),
    ("StridedSlice", [_ones(2, 3), _int([0, 0]), _int([1, 1]), _int([0, 1])], [0] * 5),
    ("UnsortedSegmentSum", [_ones(3), _int([0, 5, 1]), _int(3)], []),
    ("OneHot", [_int([1]), _int(-1), np.float32(1), np.float32(0)], [-1]),
    ("Sum", [_ones(2, 3), _int([2])], [False]),
    ("Squeeze", [_ones(2, 3)], [[0]]),
    ("SplitV", [_ones(2, 6), _int([1, 2]), _int(1)], []),
    ("Tile", [_ones(2, 3), _int([1])], []),
    ("BroadcastTo", [_ones(2, 3), _int([3, 3])], []),
    ("Range", [_int(0), _int(5), _int(0)], []),
    ("InvertPermutation", [_int([0, 0, 1])], []),
    ("SparseSoftmaxCrossEntropyWithLogits", [_ones(2, 3), _int([0, 3])], []),
    ("Fill", [_int([-1, 2]), np.float32(1)], []),
    ("Pad", [_ones(2, 3), _int([[3, 0], [0, 0]])], [0.0, "REFLECT"]),
    ("Cumsum", [_ones(2, 3), _int(2)], [False, False]),
    ("ArgMax", [_ones(2, 3), _int(2)], [em.int64]),
    ("ExpandDims", [_ones(2, 3), _int(3)], []),
    ("Unpack", [_ones(2, 3)], [3, 0]),
    ("Pack", [[_ones(2, 3), _ones(3, 2)]], [0]),
    ("MirrorPadGrad", [_ones(2, 3), _int([[2, 0], [0, 0]])], ["REFLECT"]),
    *conv_op_examples.ERROR_CASES,
]


@pytest.mark.parametrize("name,inputs,attrs", [pytest.param(*c, id=f"{c[0]}-{k}") for k, c in enumerate(ERROR_CASES)])
def test_errors_match_tensorflow(name, inputs, attrs):
    """The same exception class as TensorFlow's (ember.errors mirrors tf.errors), from a message that names
    the op."""
    with pytest.raises(real_tf.errors.OpError) as theirs:
        _tf_call(name, _tf_inputs(inputs), attrs)
    with pytest.raises(em.errors.OpError, match=name) as ours:
        _C.op(name)(*_ember_inputs(inputs), *attrs)
    assert type(ours.value).__name__ == type(theirs.value).__name__, (str(ours.value), str(theirs.value))


def _second_order(name, dtype):
    """(ember's, TensorFlow's) gradient w.r.t. the float inputs of <v, first-order gradient>, with v random:
    a Hessian-vector product, through the gradient rules' own gradients."""
    rng = np.random.default_rng(_seed(name, dtype) + 2)
    inputs, attrs = _case(name, dtype, rng)
    if name == "Cast":
        attrs = [em.float64 if dtype == np.float32 else em.float32]
    slots = _float_slots(inputs, dtype)
    base = [inputs[i] if j is None else inputs[i][j] for i, j in slots]
    probe = _flat(_C.op(name)(*_ember_inputs(inputs), *attrs))
    weights = [rng.uniform(-1, 1, o.shape).astype(dtype) if o.dtype.is_floating else None for o in probe]
    directions = [rng.uniform(-1, 1, b.shape).astype(dtype) for b in base]

    def hvp(fw, call):
        xs = [fw.constant(b) for b in base]
        with fw.GradientTape() as outer:
            outer.watch(xs)
            with fw.GradientTape() as inner:
                inner.watch(xs)
                outs = _flat(call(_assemble(inputs, slots, xs, fw.constant)))
                loss = fw.add_n([fw.reduce_sum(o * w) for o, w in zip(outs, weights) if w is not None])
            grads = inner.gradient(loss, xs)
            grads = [fw.zeros_like(x) if g is None else fw.convert_to_tensor(g) for x, g in zip(xs, grads)]
            total = fw.add_n([fw.reduce_sum(g * d) for g, d in zip(grads, directions)])
        return [np.zeros_like(b) if h is None else fw.convert_to_tensor(h).numpy()
                for b, h in zip(base, outer.gradient(total, xs))]

    ours = hvp(em, lambda args: _C.op(name)(*args, *attrs))
    theirs = hvp(real_tf, lambda args: _tf_call(name, args, attrs))
    return ours, theirs


@pytest.mark.parametrize("name,dtype", _params("test_second_order_gradients_match_tensorflow", DIFFERENTIABLE,
                                                lambda name: (np.float64,)))
def test_second_order_gradients_match_tensorflow(name, dtype):
    ours, theirs = _second_order(name, dtype)
    tol = TOLERANCE[np.dtype(dtype)]
    for k, (o, t) in enumerate(zip(ours, theirs)):
        np.testing.assert_allclose(o, t, rtol=tol, atol=tol, err_msg=f"{name}: second-order gradient, input {k}")


PRINTED = [np.float32(1 / 3), np.arange(24, dtype=np.float32).reshape(2, 3, 4) / 7,
           np.arange(16, dtype=np.int32).reshape(2, 2, 2, 2), np.arange(5 * 3 * 2, dtype=np.int64).reshape(5, 3, 2),
           np.array([np.nan, -np.nan, np.inf, -np.inf, -0.0, 1e-5, 123456789.0, 0.1, 1.5e300, 2.0]),
           np.array([0.1, 1 / 3, 1000.7], np.float16), np.array([0.1, 1 / 3, 1000.7], ml_dtypes.bfloat16),
           np.array([[True, False]]), np.array([[3, 200]], np.uint8), np.zeros([0], np.float32)]


def _printed(x, summarize, capfd):
    """(ember's, TensorFlow's) text of PrintV2 on x and a scalar."""
    inputs, attrs = [[x, np.int32(7)]], ["a: \x1f, b: \x1f", "stderr", "|\n", summarize]
    capfd.readouterr()
    _C.op("PrintV2")(*_ember_inputs(inputs), *attrs)
    ours = capfd.readouterr().err
    _tf_call("PrintV2", _tf_inputs(inputs), attrs)
    return ours, capfd.readouterr().err


@pytest.mark.parametrize("summarize", [-1, 1, 3])
def test_printed_text_matches_tensorflow(summarize, capfd):
    for x in PRINTED:
        ours, theirs = _printed(x, summarize, capfd)
        assert ours == theirs, f"{x.dtype}{list(x.shape)}, summarize={summarize}"


def test_printed_empty_matrices_match_tensorflow(capfd):
    # TensorFlow prints an empty tensor of rank > 1 as its first separator and "..." ("[\n\n ...]" for shape
    # [2, 0, 3]); so does ember.
    ours, theirs = _printed(np.zeros([2, 0, 3], np.float32), 3, capfd)
    assert ours == theirs
