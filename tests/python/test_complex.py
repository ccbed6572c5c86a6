"""complex64/complex128: dtypes, conversion, tf.complex/real/imag/conj/abs/angle, casts, element-wise math,
reductions, matmul, array ops, gradients (TensorFlow's convention), eager and inside ember.function, GraphDef
and checkpoints; each compared with TensorFlow 2 run on the same values."""
import numpy as np
import pytest
import tensorflow as real_tf

import ember as tf
from ember import errors

RNG = np.random.default_rng(17)


def cplx(shape, dtype=np.complex64):
    return (RNG.uniform(-2, 2, shape) + 1j * RNG.uniform(-2, 2, shape)).astype(dtype)


def close(ours, theirs, dtype=np.complex64):
    ours, theirs = np.asarray(ours), np.asarray(theirs)
    assert ours.dtype == theirs.dtype, (ours.dtype, theirs.dtype)
    assert ours.shape == theirs.shape, (ours.shape, theirs.shape)
    tol = 1e-5 if np.dtype(dtype) in (np.complex64, np.float32) else 1e-12
    np.testing.assert_allclose(ours, theirs, rtol=tol, atol=tol)


def both(fn, *args):
    """fn run with ember and with TensorFlow, eagerly and inside a function, on the same NumPy inputs."""
    ours = fn(tf, *[tf.constant(a) for a in args]).numpy()
    staged = tf.function(lambda *xs: fn(tf, *xs))(*[tf.constant(a) for a in args]).numpy()
    theirs = fn(real_tf, *[real_tf.constant(a) for a in args]).numpy()
    return ours, staged, theirs


# ---- dtypes and conversion
def test_dtype_objects_match_tensorflow():
    for name in ("complex64", "complex128"):
        ours, theirs = getattr(tf, name), getattr(real_tf, name)
        assert ours.name == theirs.name and ours.size == theirs.size
        assert ours.is_complex and not ours.is_floating and ours.is_numeric
        assert ours.as_datatype_enum == theirs.as_datatype_enum
        assert ours.real_dtype.name == theirs.real_dtype.name
        assert ours.as_numpy_dtype == theirs.as_numpy_dtype
        assert tf.as_dtype(np.dtype(name)) == ours
    assert tf.as_dtype(complex) == tf.complex128
    assert tf.float32.real_dtype == tf.float32


def test_constants_round_trip_numpy():
    for dtype in (np.complex64, np.complex128):
        a = cplx([2, 3], dtype)
        t = tf.constant(a)
        assert t.dtype.name == np.dtype(dtype).name
        np.testing.assert_array_equal(t.numpy(), a)
        np.testing.assert_array_equal(np.asarray(t), a)  # the buffer protocol ("Zf"/"Zd")


def test_python_complex_values_infer_complex128_as_tensorflow():
    assert tf.constant(1 + 2j).dtype == real_tf.constant(1 + 2j).dtype.name
    assert tf.constant([1 + 2j, 3j]).dtype == tf.complex128
    assert tf.constant(1.5, dtype=tf.complex64).numpy() == real_tf.constant(1.5, dtype=real_tf.complex64).numpy()
    with pytest.raises(TypeError):
        tf.constant(1 + 2j, dtype=tf.float32)
    with pytest.raises(TypeError):
        real_tf.constant(1 + 2j, dtype=real_tf.float32)


def test_python_scalars_take_the_complex_operand_dtype():
    c = tf.constant([1 + 2j], tf.complex64)
    for v in (2, 2.5, 1j):
        ours, theirs = c * v, real_tf.constant([1 + 2j], real_tf.complex64) * v
        close(ours.numpy(), theirs.numpy())


def test_no_implicit_promotion_between_complex_and_real():
    with pytest.raises(errors.InvalidArgumentError):
        tf.constant([1 + 2j]) + tf.constant([1.0], tf.float64)
    with pytest.raises(real_tf.errors.InvalidArgumentError):
        real_tf.constant([1 + 2j]) + real_tf.constant([1.0], real_tf.float64)
    with pytest.raises(errors.InvalidArgumentError):
        tf.constant([1 + 2j], tf.complex64) * tf.constant([1 + 2j], tf.complex128)


def test_ordering_comparisons_reject_complex_as_tensorflow():
    c = tf.constant([1 + 2j])
    with pytest.raises(errors.InvalidArgumentError, match="Less"):
        tf.math.less(c, c)


# ---- tf.complex, real, imag, conj, abs, angle
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_complex_from_parts_broadcasts(dtype):
    re, im = RNG.normal(size=[2, 3]).astype(dtype), RNG.normal(size=[3]).astype(dtype)
    ours, staged, theirs = both(lambda lib, a, b: lib.complex(a, b), re, im)
    close(ours, theirs, dtype)
    close(staged, theirs, dtype)


def test_complex_rejects_mixed_or_integer_parts():
    with pytest.raises(TypeError, match="real"):
        tf.complex(tf.ones([2]), tf.ones([2], tf.float64))
    with pytest.raises(TypeError, match="real"):
        tf.complex(tf.ones([2], tf.int32), tf.ones([2], tf.int32))


@pytest.mark.parametrize("dtype", [np.complex64, np.complex128])
@pytest.mark.parametrize("fn", ["real", "imag", "conj", "abs", "angle"])
def test_parts_match_tensorflow(fn, dtype):
    x = cplx([3, 4], dtype)
    x[0, 0] = 0
    ours, staged, theirs = both(lambda lib, a: getattr(lib.math, fn)(a), x)
    close(ours, theirs, dtype)
    close(staged, theirs, dtype)


def test_parts_of_real_tensors_follow_tensorflow():
    x = np.array([-1.5, 0.0, 2.0], np.float32)
    for fn in ("real", "imag", "conj", "angle"):
        ours, _, theirs = both(lambda lib, a: getattr(lib.math, fn)(a), x)
        close(ours, theirs, np.float32)


@pytest.mark.parametrize("value", [[True, False], ["a", "bc"]], ids=["bool", "string"])
def test_parts_of_non_numeric_tensors_follow_tensorflow(value):
    # real and conj refuse them (real returned the tensor itself); imag is zeros_like (False, b"").
    for fn in ("real", "conj"):
        with pytest.raises(TypeError):
            getattr(real_tf.math, fn)(real_tf.constant(value))
        with pytest.raises(TypeError, match="numeric"):
            getattr(tf.math, fn)(tf.constant(value))
    theirs = real_tf.math.imag(real_tf.constant(value)).numpy().tolist()
    assert tf.math.imag(tf.constant(value)).numpy().tolist() == theirs


# ---- casts
@pytest.mark.parametrize("src,dst", [(np.complex64, "float32"), (np.complex128, "int32"), (np.complex64, "bool"),
                                     (np.complex64, "complex128"), (np.complex128, "complex64"),
                                     (np.float32, "complex64"), (np.int32, "complex128")])
def test_casts_match_tensorflow(src, dst):
    x = cplx([5], np.complex128) * 3
    x = x.astype(src) if np.dtype(src).kind == "c" else x.real.astype(src)
    x[0] = 0
    ours = tf.cast(tf.constant(x), dst).numpy()
    theirs = real_tf.cast(real_tf.constant(x), dst).numpy()
    assert ours.dtype == theirs.dtype
    np.testing.assert_allclose(ours, theirs, rtol=1e-6)


# ---- element-wise math
UNARY = ["negative", "exp", "log", "sqrt", "rsqrt", "square", "sin", "cos", "tan", "tanh", "sigmoid",
         "reciprocal", "log1p", "expm1", "sinh", "cosh", "asin", "acos", "atan", "asinh", "acosh", "atanh", "sign"]


@pytest.mark.parametrize("dtype", [np.complex64, np.complex128])
@pytest.mark.parametrize("fn", UNARY)
def test_unary_math_matches_tensorflow(fn, dtype):
    x = cplx([4, 5], dtype)
    ours, staged, theirs = both(lambda lib, a: getattr(lib.math, fn)(a), x)
    close(ours, theirs, dtype)
    close(staged, theirs, dtype)


BINARY = ["add", "subtract", "multiply", "divide", "pow", "equal", "not_equal", "squared_difference"]


@pytest.mark.parametrize("dtype", [np.complex64, np.complex128])
@pytest.mark.parametrize("fn", BINARY)
def test_binary_math_matches_tensorflow_with_broadcasting(fn, dtype):
    x, y = cplx([4, 5], dtype), cplx([5], dtype)
    y[1] = x[0, 1]  # equal elements somewhere
    ours, staged, theirs = both(lambda lib, a, b: getattr(lib.math, fn)(a, b), x, y)
    close(ours, theirs, dtype if fn not in ("equal", "not_equal") else np.float64)
    close(staged, theirs, dtype if fn not in ("equal", "not_equal") else np.float64)


# Points on and off both axes, with both signs of zero, and the branch points 0, +-1, +-i: the inverse
# functions' branch cuts lie on the axes, where the signed zero picks the side.
AXIS_PARTS = [-3.0, -1.0, -0.5, -0.0, 0.0, 0.5, 1.0, 3.0]
AXIS_GRID = np.array([complex(re, im) for re in AXIS_PARTS for im in AXIS_PARTS])
BRANCH_CUT_OPS = ["Sinh", "Cosh", "Asin", "Acos", "Atan", "Asinh", "Acosh", "Atanh", "Sign"]


def same_bits_but_nan_signs(ours, theirs):
    nan = np.isnan(ours) & np.isnan(theirs)
    same = (ours == theirs) & (np.signbit(ours) == np.signbit(theirs))
    return (nan | same).all()


@pytest.mark.parametrize("dtype", [np.complex64, np.complex128])
@pytest.mark.parametrize("name", BRANCH_CUT_OPS)
def test_inverse_and_hyperbolic_functions_match_tensorflow_bit_for_bit_on_the_axes(name, dtype):
    z = AXIS_GRID.astype(dtype)
    ours = tf._C.op(name)(tf.constant(z)).numpy()
    theirs = getattr(real_tf.raw_ops, name)(x=real_tf.constant(z)).numpy()
    assert same_bits_but_nan_signs(ours.real, theirs.real), (z, ours, theirs)
    assert same_bits_but_nan_signs(ours.imag, theirs.imag), (z, ours, theirs)


@pytest.mark.parametrize("name", BRANCH_CUT_OPS)
def test_inverse_and_hyperbolic_gradients_match_tensorflow_on_the_axes(name):
    """TensorFlow's rules take the derivative at conj(z) (Note [Complex inverse functions]): on a branch cut
    that is not conj(f'(z)), so the axes tell the two apart."""
    z = AXIS_GRID.astype(np.complex128)
    upstream = np.full(z.shape, 0.5 - 2j)

    def grads(lib, op, x):
        with lib.GradientTape() as tape:
            tape.watch(x)
            y = op(x)
        return tape.gradient(y, x, output_gradients=lib.constant(upstream)).numpy()

    theirs = grads(real_tf, lambda x: getattr(real_tf.raw_ops, name)(x=x), real_tf.constant(z))
    ours = grads(tf, tf._C.op(name), tf.constant(z))
    np.testing.assert_allclose(ours, theirs, rtol=1e-12, atol=1e-12, equal_nan=True)


def test_sign_of_complex_and_its_gradient_match_tensorflow():
    """tf.math.sign of complex z is DivNoNan(z, |z|) in TensorFlow, whose gradient is not zero (the Sign op's
    is); 0 at 0."""
    z = np.concatenate([AXIS_GRID, cplx([6], np.complex128)])
    upstream = cplx(z.shape, np.complex128)
    results = []
    for lib in (tf, real_tf):
        x = lib.constant(z)
        with lib.GradientTape() as tape:
            tape.watch(x)
            y = lib.math.sign(x)
        results.append((y.numpy(), tape.gradient(y, x, output_gradients=lib.constant(upstream)).numpy()))
    (ours, ours_grad), (theirs, theirs_grad) = results
    np.testing.assert_array_equal(ours, theirs)
    assert ours[list(AXIS_GRID).index(0j)] == 0
    np.testing.assert_allclose(ours_grad, theirs_grad, rtol=1e-12, atol=1e-12, equal_nan=True)


def test_squared_difference_of_complex_is_the_squared_magnitude_as_tensorflow():
    x, y = cplx([3, 4], np.complex128), cplx([4], np.complex128)
    ours, staged, theirs = both(lambda lib, a, b: lib.math.squared_difference(a, b), x, y)
    np.testing.assert_array_equal(theirs.imag, 0)
    close(ours, theirs, np.complex128)
    close(staged, theirs, np.complex128)


def test_operators_and_add_n():
    x, y = cplx([3]), cplx([3])
    ours, _, theirs = both(lambda lib, a, b: lib.math.add_n([a * b - a / b, -a, a ** 2]), x, y)
    close(ours, theirs)


# ---- reductions, matmul, array ops
@pytest.mark.parametrize("dtype", [np.complex64, np.complex128])
@pytest.mark.parametrize("fn", ["reduce_sum", "reduce_mean", "reduce_prod"])
@pytest.mark.parametrize("axis", [None, 0, 1])
def test_reductions_match_tensorflow(fn, axis, dtype):
    x = cplx([3, 4], dtype) / 2
    ours, staged, theirs = both(lambda lib, a: getattr(lib, fn)(a, axis=axis), x)
    close(ours, theirs, dtype)
    close(staged, theirs, dtype)


@pytest.mark.parametrize("dtype", [np.complex64, np.complex128])
@pytest.mark.parametrize("flags", [{}, {"transpose_a": True}, {"adjoint_b": True}, {"adjoint_a": True,
                                                                                    "transpose_b": True}])
def test_matmul_and_batch_matmul_match_tensorflow(flags, dtype):
    a, b = cplx([2, 3, 4], dtype), cplx([4, 5], dtype)
    if flags.get("transpose_a") or flags.get("adjoint_a"):
        a = np.swapaxes(a, -1, -2).copy()
    if flags.get("transpose_b") or flags.get("adjoint_b"):
        b = b.T.copy()
    ours, staged, theirs = both(lambda lib, x, y: lib.linalg.matmul(x, y, **flags), a, b)
    close(ours, theirs, dtype)
    close(staged, theirs, dtype)


def test_adjoint_conjugates_and_transposes():
    x = cplx([2, 3, 4])
    ours, staged, theirs = both(lambda lib, a: lib.linalg.adjoint(a), x)
    close(ours, theirs)
    close(staged, theirs)


def test_array_ops_move_complex_values():
    x = cplx([2, 3, 4], np.complex128)
    cases = [
        lambda lib, a: lib.reshape(a, [6, 4]),
        lambda lib, a: lib.transpose(a, [2, 0, 1]),
        lambda lib, a: lib.concat([a, a], axis=1),
        lambda lib, a: lib.gather(a, [1, 0, 1], axis=1),
        lambda lib, a: lib.stack([a, a]),
        lambda lib, a: a[:, 1:, ::2],
        lambda lib, a: lib.tile(a, [1, 2, 1]),
        lambda lib, a: lib.pad(a, [[0, 0], [1, 0], [0, 2]]),
        lambda lib, a: lib.broadcast_to(a[:1], [3, 3, 4]),
        lambda lib, a: lib.zeros_like(a) + lib.ones_like(a),
        lambda lib, a: lib.reverse(a, [1]),
        lambda lib, a: lib.where(lib.math.real(a) > 0, a, lib.zeros_like(a)),
        lambda lib, a: lib.gather_nd(a, [[0, 1], [1, 2]]),
        lambda lib, a: lib.identity(lib.expand_dims(lib.squeeze(a[:1]), 0)),
    ]
    for case in cases:
        ours, staged, theirs = both(case, x)
        close(ours, theirs, np.complex128)
        close(staged, theirs, np.complex128)


def test_variables_hold_complex_values():
    v = tf.Variable(cplx([3]))
    v.assign(v * 2j)
    assert v.dtype == tf.complex64
    assert v.numpy().dtype == np.complex64


# ---- gradients with TensorFlow's convention (Note [Complex gradients])
def _grads(lib, loss_fn, x):
    v = lib.Variable(x)
    with lib.GradientTape() as tape:
        loss = loss_fn(lib, v)
    return tape.gradient(loss, v).numpy()


LOSSES = {
    "abs_square": lambda lib, v: lib.reduce_sum(lib.abs(v * v)),
    "real_of_exp_conj": lambda lib, v: lib.math.real(lib.reduce_sum(lib.exp(v) * lib.math.conj(v))),
    "complex_target": lambda lib, v: lib.reduce_sum(v * v),
    "imag_log_sqrt": lambda lib, v: lib.reduce_sum(lib.math.imag(lib.math.log(v) + lib.sqrt(v))),
    "angle_div": lambda lib, v: lib.reduce_sum(lib.math.angle(v / (v + 1.0))),
    "trig": lambda lib, v: lib.reduce_sum(lib.abs(lib.sin(v) * lib.cos(v) + lib.tanh(v) - lib.sigmoid(v))),
    "pow_reciprocal": lambda lib, v: lib.reduce_sum(lib.math.real(lib.pow(v, v) + lib.math.reciprocal(v))),
    "rsqrt_square": lambda lib, v: lib.reduce_sum(lib.abs(lib.math.rsqrt(v) - lib.square(v))),
    "mean_prod": lambda lib, v: lib.math.real(lib.reduce_mean(v) * lib.reduce_prod(v)),
    "matmul": lambda lib, v: lib.reduce_sum(lib.abs(lib.matmul(lib.reshape(v, [2, 3]), lib.reshape(v, [3, 2])))),
    "cast_parts": lambda lib, v: lib.reduce_sum(lib.cast(v, lib.float32) * lib.math.imag(v)),
    "complex_of_parts": lambda lib, v: lib.reduce_sum(lib.abs(lib.complex(lib.math.imag(v), lib.math.real(v) * 2.0))),
}


@pytest.mark.parametrize("name", sorted(LOSSES))
def test_gradients_match_tensorflow(name):
    x = cplx([6])
    ours, theirs = _grads(tf, LOSSES[name], x), _grads(real_tf, LOSSES[name], x)
    np.testing.assert_allclose(ours, theirs, rtol=2e-4, atol=2e-4)


# Every differentiable element-wise op that takes complex operands, with a complex upstream gradient: most
# of TensorFlow's rules conjugate the operands (Mul, Div, DivNoNan, ...), but its Xdivy, Xlogy, Xlog1py,
# MulNoNan and SquaredDifference rules take them as they are, and ember's gradients are TensorFlow's.
ELEMENTWISE_GRADIENT_OPS = [
    "Add", "Sub", "Mul", "RealDiv", "DivNoNan", "MulNoNan", "Pow", "Xdivy", "Xlogy", "Xlog1py",
    "Conj", "Cos", "Sin", "Tan", "Tanh", "Sigmoid", "Exp", "Expm1", "Log", "Log1p", "Neg", "Reciprocal",
    "Rsqrt", "Sqrt", "Square", "Sinh", "Cosh", "Asin", "Acos", "Atan", "Asinh", "Acosh", "Atanh", "Sign",
    "SquaredDifference",
]


@pytest.mark.parametrize("name", ELEMENTWISE_GRADIENT_OPS)
def test_elementwise_gradients_with_a_complex_upstream_match_tensorflow(name):
    info = tf._C.op_info(name)
    args = [(RNG.uniform(0.3, 1.5, [3]) + 1j * RNG.uniform(-1, 1, [3])).astype(np.complex128)
            for _ in info["inputs"]]
    if name.startswith("X"):
        args[0][1] = 0  # the branch where x is 0
    upstream = cplx([3], np.complex128)

    def grads(lib, op, *xs):
        with lib.GradientTape() as tape:
            for x in xs:
                tape.watch(x)
            z = op(*xs)
        return tape.gradient(z, list(xs), output_gradients=lib.constant(upstream))

    theirs = grads(real_tf, lambda *xs: getattr(real_tf.raw_ops, name)(**dict(zip(info["inputs"], xs))),
                   *[real_tf.constant(a) for a in args])
    ours = [tf.constant(a) for a in args]
    for got in (grads(tf, tf._C.op(name), *ours), tf.function(lambda *xs: grads(tf, tf._C.op(name), *xs))(*ours)):
        for a, b in zip(got, theirs):
            close(a.numpy(), b.numpy(), np.complex128)


def test_gather_gradient_matches_tensorflow():
    """GatherV2's gradient sums dy's rows by index (UnsortedSegmentSum, which takes complex values too)."""
    x, weights = cplx([5, 2]), cplx([4, 2])
    grads = []
    for lib in (tf, real_tf):
        v = lib.constant(x)
        with lib.GradientTape() as tape:
            tape.watch(v)
            loss = lib.math.real(lib.reduce_sum(lib.gather(v, [4, 0, 4, 2]) * lib.constant(weights)))
        grads.append(lib.convert_to_tensor(tape.gradient(loss, v)).numpy())  # TensorFlow's: IndexedSlices
    close(grads[0], grads[1])


@pytest.mark.parametrize("reverse", [False, True])
@pytest.mark.parametrize("exclusive", [False, True])
@pytest.mark.parametrize("fn", ["cumsum", "cumprod"])
def test_cumulative_sums_and_products_and_their_gradients_match_tensorflow(fn, exclusive, reverse):
    """TensorFlow's Cumprod rule, cumsum(dy * y, reversed) / x, takes the operands unconjugated; ember's is the
    same (Note [Cumprod gradient with zeros]) except at a zero of x, where TensorFlow's DivNoNan gives 0 and
    ember the limit: there it is compared with TensorFlow's at a tiny x."""
    x, upstream = cplx([3, 5], np.complex128), cplx([3, 5], np.complex128)
    x[1, 2] = 0

    def value_and_grad(lib, x, in_function=False):
        def run(t):
            with lib.GradientTape() as tape:
                tape.watch(t)
                y = getattr(lib.math, fn)(t, axis=1, exclusive=exclusive, reverse=reverse)
            return y, tape.gradient(y, t, output_gradients=lib.constant(upstream))
        results = (lib.function(run) if in_function else run)(lib.constant(x))
        return [r.numpy() for r in results]

    theirs, theirs_grad = value_and_grad(real_tf, x)
    near_zero = x.copy()
    near_zero[1, 2] = 1e-30
    theirs_grad[1, 2] = value_and_grad(real_tf, near_zero)[1][1, 2]
    for in_function in (False, True):
        ours, ours_grad = value_and_grad(tf, x, in_function)
        close(ours, theirs, np.complex128)
        close(ours_grad, theirs_grad, np.complex128)


def test_scatter_nd_and_the_gradient_of_gather_nd_match_tensorflow():
    indices = np.array([[1, 0], [0, 2], [1, 0]])  # a repeated index sums
    params, upstream = cplx([2, 3, 4]), cplx([3, 4])
    ours = tf.scatter_nd(indices, tf.constant(upstream), [2, 3, 4]).numpy()
    close(ours, real_tf.scatter_nd(indices, upstream, [2, 3, 4]).numpy())
    grads = []
    for lib in (tf, real_tf):
        v = lib.constant(params)
        with lib.GradientTape() as tape:
            tape.watch(v)
            y = lib.gather_nd(v, indices)
        grads.append(lib.convert_to_tensor(tape.gradient(y, v, output_gradients=lib.constant(upstream))).numpy())
    close(grads[0], grads[1])


def test_gradients_inside_a_function_match_eager():
    x = cplx([6])
    loss = LOSSES["real_of_exp_conj"]

    @tf.function
    def staged(v):
        with tf.GradientTape() as tape:
            tape.watch(v)
            out = loss(tf, v)
        return tape.gradient(out, v)

    np.testing.assert_allclose(staged(tf.constant(x)).numpy(), _grads(real_tf, loss, x), rtol=2e-4, atol=2e-4)


def test_gradient_of_real_parts_is_complex():
    x = tf.constant(cplx([3]))
    with tf.GradientTape() as tape:
        tape.watch(x)
        y = tf.reduce_sum(tf.math.real(x) * 3.0)
    g = tape.gradient(y, x)
    assert g.dtype == tf.complex64
    np.testing.assert_allclose(g.numpy(), np.full([3], 3 + 0j))


# ---- fusion, GraphDef, checkpoints, function signatures
def test_complex_element_wise_ops_are_never_fused():
    spec = tf.TensorSpec([2, 3], tf.complex64)
    text = tf.function(lambda x, y: tf.sin(x * y) + x).get_concrete_function(spec, spec).graph.optimized_as_text()
    assert "FusedElementwise" not in text, text
    real_spec = tf.TensorSpec([2, 3], tf.float32)
    real_text = tf.function(lambda x, y: tf.sin(x * y) + x).get_concrete_function(real_spec, real_spec).graph
    assert "FusedElementwise" in real_text.optimized_as_text()  # the real program still fuses


def test_function_signatures_take_complex_specs():
    f = tf.function(lambda x: tf.math.conj(x) * 2, input_signature=[tf.TensorSpec([None], tf.complex128)])
    x = cplx([4], np.complex128)
    np.testing.assert_allclose(f(tf.constant(x)).numpy(), np.conj(x) * 2)
    with pytest.raises((TypeError, ValueError)):
        f(tf.constant(x.astype(np.complex64)))


def test_graph_def_round_trips_complex_constants_through_tensorflow():
    x = cplx([2, 2])
    f = tf.function(lambda a: a * tf.constant(x), input_signature=[tf.TensorSpec([2, 2], tf.complex64)])
    graph_def = f.get_concrete_function().graph.as_graph_def()
    theirs = real_tf.compat.v1.GraphDef.FromString(graph_def.SerializeToString())
    consts = [n for n in theirs.node if n.op == "Const"]
    assert consts and any(n.attr["dtype"].type == real_tf.complex64.as_datatype_enum for n in consts)
    value = real_tf.make_ndarray(next(n for n in consts if n.attr["dtype"].type == 8).attr["value"].tensor)
    np.testing.assert_array_equal(value, x)


@pytest.mark.parametrize("dtype", [tf.complex64, tf.complex128], ids=lambda d: d.name)
def test_tensorflow_runs_embers_graph_of_the_parts_ops(dtype):
    """Real, Imag, ComplexAbs, Angle and Complex nodes carry their Tout, without which TensorFlow reads
    float32 (complex64 for Complex) and refuses a complex128 graph."""

    @tf.function(input_signature=[tf.TensorSpec([3], dtype)])
    def f(z):
        return (tf.math.real(z), tf.math.imag(z), tf.abs(z), tf.math.angle(z),
                tf.complex(tf.math.imag(z), tf.math.real(z)))

    graph = f.get_concrete_function().graph
    graph_def = real_tf.compat.v1.GraphDef.FromString(graph.as_graph_def().SerializeToString())
    wrapped = real_tf.compat.v1.wrap_function(lambda: real_tf.compat.v1.import_graph_def(graph_def, name=""), [])
    run = wrapped.prune(feeds=[graph.inputs[0].name], fetches=[t.name for t in graph.outputs])
    x = cplx([3], dtype.as_numpy_dtype)
    for theirs, ours in zip(run(real_tf.constant(x)), f(x)):
        assert theirs.dtype.name == ours.dtype.name
        np.testing.assert_allclose(theirs.numpy(), ours.numpy(), rtol=1e-6)


def test_checkpoints_are_readable_by_tensorflow(tmp_path):
    x = cplx([3, 2], np.complex128)
    v = tf.Variable(x)
    path = tf.train.Checkpoint(v=v).write(str(tmp_path / "ckpt"))
    reader = real_tf.train.load_checkpoint(path)
    key = next(k for k in reader.get_variable_to_shape_map() if k.startswith("v/"))
    np.testing.assert_array_equal(reader.get_tensor(key), x)
    w = tf.Variable(np.zeros([3, 2], np.complex128))
    tf.train.Checkpoint(v=w).read(path)
    np.testing.assert_array_equal(w.numpy(), x)
    theirs = real_tf.Variable(np.zeros([3, 2], np.complex128))
    real_tf.train.Checkpoint(v=theirs).read(path).expect_partial()
    np.testing.assert_array_equal(theirs.numpy(), x)


def test_python_scalars_of_complex_tensors_follow_numpy_as_tensorflow():
    assert bool(tf.constant(1j)) and not bool(tf.constant(0j, tf.complex64))
    assert float(tf.constant(1.5 + 2j)) == 1.5  # the real part (NumPy warns; TensorFlow returns it too)
    assert abs(tf.constant([3 + 4j])).numpy().tolist() == [5.0]


def finite_difference_gradient(loss, z, eps=1e-6):
    """dL/dx + i dL/dy by central differences: TensorFlow's gradient of a real loss at complex z."""
    z = np.asarray(z, np.complex128)
    out = np.zeros_like(z)
    for i in np.ndindex(z.shape):
        for unit in (1, 1j):
            step = np.zeros_like(z)
            step[i] = unit * eps
            d = (loss(tf, tf.constant(z + step)).numpy() - loss(tf, tf.constant(z - step)).numpy()) / (2 * eps)
            out[i] += d * unit
    return out


def ember_gradient(loss, z):
    x = tf.constant(z)
    with tf.GradientTape() as tape:
        tape.watch(x)
        y = loss(tf, x)
    return tape.gradient(y, x).numpy()


W = np.linspace(-1, 1, 6)
FD_LOSSES = {
    "Real": lambda lib, v: lib.reduce_sum(lib.math.real(v) * W),
    "Imag": lambda lib, v: lib.reduce_sum(lib.math.imag(v) * W),
    "Conj": lambda lib, v: lib.reduce_sum(lib.math.real(lib.math.conj(v) * (1 + 2j))),
    "ComplexAbs": lambda lib, v: lib.reduce_sum(lib.abs(v) * W),
    "Angle": lambda lib, v: lib.reduce_sum(lib.math.angle(v) * W),
    "Complex": lambda lib, v: lib.reduce_sum(lib.abs(lib.complex(lib.math.real(v) ** 2, lib.math.imag(v)))),
}


@pytest.mark.parametrize("name", sorted(FD_LOSSES))
def test_part_gradients_match_finite_differences(name):
    z = cplx([6], np.complex128)
    np.testing.assert_allclose(ember_gradient(FD_LOSSES[name], z), finite_difference_gradient(FD_LOSSES[name], z),
                               rtol=1e-6, atol=1e-6)


@pytest.mark.parametrize("kwargs", [{}, dict(precision=2), dict(scientific=True), dict(shortest=True),
                                    dict(width=12), dict(width=12, fill="0"),
                                    dict(precision=3, scientific=True, width=14)])
@pytest.mark.parametrize("dtype", [np.complex64, np.complex128])
def test_as_string_formats_both_parts_as_tensorflow(kwargs, dtype):
    values = np.array([[1.5 - 2j, -0.25 + 1e-7j, 3 + 0j], [1 / 3 + 2j, 1e20 - 1e-20j, -0.0 + 0j]], dtype)
    ours = tf.strings.as_string(tf.constant(values), **kwargs)
    staged = tf.function(lambda z: tf.strings.as_string(z, **kwargs))(tf.constant(values))
    theirs = real_tf.strings.as_string(real_tf.constant(values), **kwargs)
    assert ours.numpy().tolist() == theirs.numpy().tolist() == staged.numpy().tolist()


def test_as_string_rejects_what_tensorflow_rejects_for_complex():
    with pytest.raises(errors.InvalidArgumentError, match="AsString: cannot select both"):
        tf.strings.as_string(tf.constant([1 + 1j]), scientific=True, shortest=True)


@pytest.mark.parametrize("dtype", [np.complex64, np.complex128])
def test_reduce_variance_and_std_of_complex_are_real_as_tensorflow(dtype):
    values = cplx([3, 4], dtype)
    for axis, keepdims in ((None, False), (0, False), (-1, True), ([0, 1], True)):
        for name in ("reduce_variance", "reduce_std"):
            ours = getattr(tf.math, name)(tf.constant(values), axis=axis, keepdims=keepdims)
            theirs = getattr(real_tf.math, name)(real_tf.constant(values), axis=axis, keepdims=keepdims)
            real = np.float32 if dtype == np.complex64 else np.float64
            assert ours.dtype.as_numpy_dtype == real
            close(ours.numpy(), theirs.numpy(), dtype=real)
    with pytest.raises(TypeError, match="Input must be either real or complex. Received integer type"):
        tf.math.reduce_variance(tf.constant([1, 2]))


def test_print_and_format_write_complex_values(capfd):
    """TensorFlow prints each complex element as '?'; ember writes its value as Python and NumPy do."""
    z = tf.constant([1.5 - 2j, -0.25 + 0.1j, complex(float("nan"), float("inf")), complex(3, -0.0)], tf.complex64)
    want = "[(1.5-2j) (-0.25+0.1j) (nan+infj) (3-0j)]"
    assert tf.strings.format("z={}", z).numpy() == ("z=" + want).encode()
    capfd.readouterr()
    tf.print("z:", z)
    tf.function(lambda t: tf.print(t, summarize=1))(tf.constant([[1 / 3 + 1j, 2j, 3]], tf.complex128))
    err = capfd.readouterr().err
    assert err == f"z: {want}\n[[(0.33333333333333331+1j) ... (3+0j)]]\n"
    with pytest.raises(errors.InvalidArgumentError, match=r"\[\(1\+2j\)\]"):
        tf.debugging.Assert(tf.constant(False), [tf.constant(1 + 2j)])


@pytest.mark.parametrize("value", [1 + 2j, 3.5, 7, [[1 + 1j]], [1 + 2j, 2], []])
def test_python_complex_of_a_tensor_and_of_a_variable_as_tensorflow(value):
    def convert(make):
        try:
            return complex(make(value))
        except TypeError as e:
            return f"TypeError: {e}"
    assert convert(tf.constant) == convert(real_tf.constant)
    if np.ndim(value) == 0:
        assert convert(tf.Variable) == convert(real_tf.Variable)
    # NumPy filling an array from tensors converts each element by __complex__ (not __float__).
    np.testing.assert_array_equal(np.array([tf.constant(value)]), np.array([real_tf.constant(value)]))
