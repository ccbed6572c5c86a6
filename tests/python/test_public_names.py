"""The names ``import ember as tf`` exposes (ember, ember.math, ember.nn): generating wrappers from the op
registry must not drop one. Written down before the wrappers became generated; extend it when adding names."""

import ember

EMBER = """
    DType GradientTape Module NewGraphFunction Tensor TensorShape TensorSpec UnconnectedGradients Variable
    VariableAggregation VariableSynchronization distribute variable_creator_scope
    abs add add_n argmax argmin as_dtype backprop bfloat16 bool boolean_mask broadcast_to cast ceil
    complex complex64 complex128 signal clip_by_value compat concat config constant constant_initializer contrib control_dependencies
    convert_to_tensor cos custom_gradient defun device device_scope divide double dtypes equal errors exp
    expand_dims eye fill float16 float32 float64 floor floordiv framework function function_graph gather
    graph_util greater greater_equal half identity init_scope initializers int16 int32 int64 int8 keras less
    less_equal linalg linspace log logical_and logical_not logical_or math matmul maximum method minimum
    module multiply name_scope negative newaxis nn norm not_equal one_hot ones ones_initializer ones_like
    ops pad polymorphic_function pow print profiler random range rank realdiv recompute_grad reduce_all
    reduce_any reduce_logsumexp reduce_max reduce_mean reduce_min reduce_prod reduce_sum reshape round
    scalar_mul shape sigmoid sign sin size slice split sqrt square squeeze stack stop_gradient strided_slice
    string strings subtract tanh tensordot tile traceback_filter transpose truediv uint8 unstack util variable_creation
    variables where zeros zeros_initializer zeros_like
    executing_eagerly inside_function group no_op tuple identity_n get_logger test io
    audio batch_to_space image space_to_batch space_to_batch_nd
""".split()

EMBER_MATH = """
    angle conj imag real abs add add_n argmax argmin cast ceil cos count_nonzero cumprod cumsum divide elu equal erf erfc exp expm1
    floor floor_div floordiv floormod greater greater_equal is_finite is_nan l2_normalize less less_equal
    log log1p log_sigmoid log_softmax logical_and logical_not logical_or logical_xor matmul maximum minimum
    mod multiply negative not_equal pow realdiv reciprocal reduce_all reduce_any reduce_euclidean_norm
    reduce_logsumexp reduce_max reduce_mean reduce_min reduce_prod reduce_std reduce_sum reduce_variance
    relu relu6 round rsqrt scalar_mul sigmoid sign sin softmax softplus softsign sqrt square
    squared_difference subtract tanh truediv unsorted_segment_sum
    confusion_matrix
    bessel_i0 bessel_i0e bessel_i1 bessel_i1e betainc erfcinv igamma igammac lbeta ndtri special zeta
""".split()

EMBER_NN = """
    compute_average_loss scale_regularization_loss
    bias_add dropout elu gelu l2_loss l2_normalize leaky_relu log_softmax moments relu relu6 selu sigmoid
    sigmoid_cross_entropy_with_logits silu softmax softmax_cross_entropy_with_logits softplus softsign
    sparse_softmax_cross_entropy_with_logits swish tanh weighted_cross_entropy_with_logits
    atrous_conv2d depth_to_space space_to_batch space_to_depth
""".split()

MATH_ALL = """
    abs add add_n argmax argmin cast ceil cos count_nonzero cumprod cumsum divide elu equal erf erfc exp expm1
    floor floor_div floordiv floormod greater greater_equal is_finite is_nan less less_equal log log1p
    logical_and logical_not logical_or logical_xor matmul maximum minimum mod multiply negative not_equal
    pow realdiv reciprocal reduce_all reduce_any reduce_euclidean_norm reduce_logsumexp reduce_max
    reduce_mean reduce_min reduce_prod reduce_std reduce_sum reduce_variance relu relu6 round rsqrt
    scalar_mul sigmoid sign sin softplus sqrt square squared_difference subtract tanh truediv
    bessel_i0 bessel_i0e bessel_i1 bessel_i1e ndtri
""".split()


def _missing(module, names):
    return [n for n in names if not hasattr(module, n)]


def test_ember_keeps_its_names():
    assert _missing(ember, EMBER) == []


def test_ember_math_keeps_its_names():
    assert _missing(ember.math, EMBER_MATH) == []


def test_ember_nn_keeps_its_names():
    assert _missing(ember.nn, EMBER_NN) == []


def test_math_all_keeps_its_names():
    from ember.ops import math_ops
    assert sorted(set(MATH_ALL) - set(math_ops.__all__)) == []


def test_math_functions_are_documented_callables():
    for name in MATH_ALL:
        fn = getattr(ember.math, name)
        assert callable(fn), name
        assert fn.__doc__, name


def test_generated_wrappers_carry_the_registry_doc():
    from ember import _C
    generated = [_C.op_info(n) for n in _C.op_names() if _C.op_info(n)["api_name"]]
    assert len(generated) >= 44  # every row of src/ember/kernels/elementwise_ops.h
    for info in generated:
        fn = getattr(ember.ops.math_ops, info["api_name"])
        assert fn.__doc__ == info["doc"], info["name"]
        assert fn.__name__ == info["api_name"]
        # tf.bitwise's ops are exported by ember.bitwise rather than ember.math, as in TensorFlow.
        assert info["api_name"] in ember.ops.math_ops.__all__ or info["api_name"] in ember.bitwise.__all__
