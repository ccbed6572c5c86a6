"""Every differentiable op's gradient against central finite differences, in float64, eagerly and inside
ember.function (table-driven over the registry: an op gets its example call from test_op_registry.py)."""
import importlib.util
import os

import numpy as np
import pytest

import ember as tf
from ember import _C, errors

import sys  # noqa: E402
sys.path.insert(0, __import__("os").path.dirname(__import__("os").path.abspath(__file__)))  # loaded by path too
import conv_op_examples  # noqa: E402

_spec = importlib.util.spec_from_file_location(
    "op_registry_examples", os.path.join(os.path.dirname(__file__), "test_op_registry.py"))
_registry = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(_registry)

F = _registry.F.astype(np.float64)
# Inputs where the example would sit on a kink or a tie of the function.
OVERRIDES = {
    "Maximum": ([F, F[::-1, ::-1].copy()], []),
    "Minimum": ([F, F[::-1, ::-1].copy()], []),
    "FloorMod": ([F + 1.3, F + 0.5], []),
    "Cast": ([F], [tf.float64]),
    "ClipByValue": ([F, np.float64(0.2), np.float64(0.5)], []),
    "Abs": ([F - 0.45], []),
    "Relu": ([F - 0.45], []),
    "Elu": ([F - 0.45], []),
    # An exclusive scan starts at log(0) = -inf, which a finite difference cannot take.
    "CumulativeLogsumexp": ([F, tf.constant(1)], [False, True]),
    # No empty segment: its value, the dtype's lowest, swamps the weighted sum.
    "UnsortedSegmentMax": ([F, tf.constant([1, 0]), tf.constant(2)], []),
    "UnsortedSegmentMin": ([F, tf.constant([1, 0]), tf.constant(2)], []),
    # padding_value gets no gradient (as in TensorFlow): bands whose result holds no padding.
    "MatrixDiagPartV3": ([F, tf.constant([0, 1]), np.float64(9.0)], ["RIGHT_LEFT"]),
    "MatrixDiagV3": ([np.arange(6, dtype=np.float64).reshape(3, 2) / 6 + 0.1, tf.constant([-1, 1]), tf.constant(2),
                      tf.constant(2), np.float64(0.5)], ["LEFT_RIGHT"]),
    # Eig's Tout follows its input's precision: complex128 for the float64 check.
    "Eig": ([_registry.EXAMPLES["Eig"][0][0].numpy().astype(np.float64)], [True, tf.complex128]),
}
# The unknown-dims check also passes every int operand (axes, perms, shapes, ...) as an argument of the
# function, so gradient rules meet them as values computed in the graph. A rule that needs one known while
# tracing would be listed here, as not done; none does.
INT_OPERANDS_KNOWN_WHILE_TRACING = set()
# IgammaGradA's rule raises, as TensorFlow has none (test_special_functions.py checks that it does).
RAISING_RULES = {"IgammaGradA", "PreventGradient"}  # PreventGradient's raises by design (test_ctc_ops.py)
# Graph-only or stateful ops whose gradients are tested elsewhere (functions, variables).
SPECIAL = {"PartitionedCall", "ReadVariableOp", "If", "StatelessIf", "Case", "StatelessCase", "While",
           "StatelessWhile",
           # its order (a float input) is an integer, NaN in between: no finite difference in it; the x-gradient
           # is checked in tests/cpp/ops/math_grad_test.cc (PolygammaGradient) and test_special_math.py
           "Polygamma",
           # TensorFlow's gradients: none for Zeta's s and Betainc's a and b (not implemented there), and none
           # at all for IgammaGradA (it raises); test_special_functions.py checks the others against finite
           # differences and TensorFlow
           "Zeta", "Betainc", *RAISING_RULES,
           # reads only the lower triangle and returns TensorFlow's symmetrized gradient, which a one-element
           # finite difference does not see; checked with symmetric perturbations in test_linalg.py
           "Cholesky",
           # complex inputs: finite differences in both parts (dL/dx + i dL/dy, TensorFlow's convention) in
           # test_complex.py and test_fft.py (test_*_gradients_match_finite_differences)
           "Real", "Imag", "Conj", "ComplexAbs", "Angle", "FFT", "IFFT", "IRFFT", "FFT2D", "IFFT2D", "IRFFT2D",
           "FFT3D", "IFFT3D", "IRFFT3D",
           # takes no float64 (as TensorFlow's): its gradient is checked against TensorFlow and a float32
           # finite difference in test_sort_ops.py
           "ApproxTopK",
           # as TensorFlow's rule, theirs does not differentiate their gradient output again, which the weighted
           # sum over all outputs here includes; the loss's gradient is checked against finite differences in
           # test_ctc_ops.py
           "CTCLoss", "CTCLossDense"} | set(conv_op_examples.NOT_FINITE_DIFFERENCE_CHECKED)


def _to64(x):
    if isinstance(x, list):
        return [_to64(v) for v in x]
    if isinstance(x, tf.Tensor) and x.dtype == tf.float32:
        return x.numpy().astype(np.float64)
    if isinstance(x, np.ndarray) and x.dtype == np.float32:
        return x.astype(np.float64)
    return x


def _attr64(a):
    return tf.float64 if a is tf.float32 else a


def _case(name):
    inputs, attrs = OVERRIDES.get(name, _registry.EXAMPLES[name])
    return [_to64(x) for x in inputs], [_attr64(a) for a in attrs]


def _flat_float_inputs(inputs):
    """(position, index in list or None) of each float64 input."""
    slots = []
    for i, x in enumerate(inputs):
        if isinstance(x, list):
            slots += [(i, j) for j, v in enumerate(x) if isinstance(v, np.ndarray) and v.dtype == np.float64]
        elif isinstance(x, np.ndarray) and x.dtype == np.float64 or isinstance(x, np.float64):
            slots.append((i, None))
    return slots


def _differentiable_ops():
    names = []
    for name in _registry.OP_NAMES:
        if name in SPECIAL or not _registry.INFO[name]["differentiable"] or name not in _registry.EXAMPLES:
            continue
        inputs, _ = _case(name)
        if _flat_float_inputs(inputs):
            names.append(name)
    return names


DIFFERENTIABLE = _differentiable_ops()


def test_every_differentiable_op_is_checked():
    info = {n: _C.op_info(n) for n in _C.op_names()}
    undeclared = [n for n, i in info.items() if i["differentiable"] and n not in DIFFERENTIABLE and n not in SPECIAL]
    assert not undeclared, f"differentiable ops without a float example for the gradient check: {undeclared}"


def _build(name, inputs, attrs):
    op = _C.op(name)
    slots = _flat_float_inputs(inputs)
    rng = np.random.default_rng(3)
    probe = op(*[[tf.constant(v) for v in x] if isinstance(x, list) else tf.constant(x) for x in inputs], *attrs)
    outs = probe if isinstance(probe, tuple) else (probe,)
    weights = [rng.uniform(-1, 1, size=o.shape) if o.dtype == tf.float64 else None for o in outs]

    def assemble(values, operands):
        args = [list(x) if isinstance(x, list) else x for x in inputs]
        for i, operand in operands.items():
            args[i] = operand
        for (i, j), v in zip(slots, values):
            if j is None:
                args[i] = v
            else:
                args[i][j] = v
        return [[tf.constant(v) if not isinstance(v, tf.Tensor) else v for v in a] if isinstance(a, list)
                else (a if isinstance(a, tf.Tensor) else tf.constant(a)) for a in args]

    def loss(*values, operands={}):  # noqa: B006 - read only
        out = op(*assemble(values, operands), *attrs)
        out = out if isinstance(out, tuple) else (out,)
        total = tf.constant(0.0, tf.float64)
        for o, w in zip(out, weights):
            if w is not None:
                total = total + tf.reduce_sum(o * tf.constant(w))
        return total

    base = [inputs[i] if j is None else inputs[i][j] for i, j in slots]
    return loss, [np.asarray(b, np.float64) for b in base]


def _numeric(loss, base, h=1e-6):
    grads = []
    for k, b in enumerate(base):
        g = np.zeros_like(b)
        for idx in np.ndindex(b.shape):
            plus = [x.copy() for x in base]
            minus = [x.copy() for x in base]
            plus[k][idx] += h
            minus[k][idx] -= h
            g[idx] = (float(loss(*plus)) - float(loss(*minus))) / (2 * h)
        grads.append(g)
    return grads


def _analytic(loss, base):
    xs = [tf.constant(b) for b in base]
    with tf.GradientTape() as tape:
        tape.watch(xs)
        value = loss(*xs)
    return [None if g is None else g.numpy() for g in tape.gradient(value, xs)]


@pytest.mark.parametrize("name", DIFFERENTIABLE)
def test_gradient_matches_finite_differences(name):
    inputs, attrs = _case(name)
    loss, base = _build(name, inputs, attrs)
    numeric = _numeric(loss, base)
    analytic = _analytic(loss, base)
    for k, (a, n) in enumerate(zip(analytic, numeric)):
        if a is None:
            assert np.allclose(n, 0, atol=1e-6), f"{name}: input {k} has no gradient but d/dx = {n}"
            continue
        np.testing.assert_allclose(a, n, rtol=1e-5, atol=1e-6, err_msg=f"{name}: input {k}")


def _staged_matches_eager(name, unknown_dims):
    """The gradient from a traced function equals the eager one; with unknown_dims, every dimension of the
    differentiated inputs is None in the input signature, so the rules must work from run-time shapes."""
    inputs, attrs = _case(name)
    loss, base = _build(name, inputs, attrs)
    eager = _analytic(loss, base)
    # With unknown_dims, int operands (axes, shapes, ...) are arguments too, so the rules meet them as
    # symbolic tensors of the graph (ConcatV2's axis: its gradient then slices at run-time offsets).
    int_slots = [i for i, x in enumerate(inputs) if isinstance(x, tf.Tensor) and x.dtype in (tf.int32, tf.int64)]
    if not unknown_dims or name in INT_OPERANDS_KNOWN_WHILE_TRACING:
        int_slots = []
    signature = None
    if unknown_dims:
        signature = [tf.TensorSpec([None] * np.ndim(b), tf.float64) for b in base]
        # SplitV's number of outputs is size_splits' length, which must be known (TF: num_split).
        signature += [tf.TensorSpec(inputs[i].shape if (name, i) == ("SplitV", 1) else [None] * inputs[i].shape.rank,
                                    inputs[i].dtype) for i in int_slots]

    @tf.function(input_signature=signature)
    def staged(*args):
        xs, operands = list(args[:len(base)]), dict(zip(int_slots, args[len(base):]))
        with tf.GradientTape() as tape:
            tape.watch(xs)
            value = loss(*xs, operands=operands)
        return tape.gradient(value, xs)

    graph = staged(*[tf.constant(b) for b in base], *[inputs[i] for i in int_slots])
    for k, (e, g) in enumerate(zip(eager, graph)):
        if e is None:
            assert g is None, f"{name}: input {k}"
            continue
        np.testing.assert_allclose(g.numpy(), e, rtol=1e-10, atol=1e-12, err_msg=f"{name}: input {k}")


@pytest.mark.parametrize("name", DIFFERENTIABLE)
def test_gradient_inside_function_matches_eager(name):
    _staged_matches_eager(name, unknown_dims=False)


@pytest.mark.parametrize("name", DIFFERENTIABLE)
def test_gradient_with_unknown_dims_matches_eager(name):
    _staged_matches_eager(name, unknown_dims=True)


# ---- Every gradient has its input's shape and dtype (Note [Checking gradient shapes] in autodiff/tape.cc)
# Over every op with a gradient rule, with the registry test's own example call (float32 and complex64
# inputs, where the finite differences above run in float64): each watched input's gradient, taken eagerly,
# inside a function and inside a function traced with every dim unknown, has the input's dtype and shape.
# Backprop itself raises InternalError naming the rule when one does not; this sweep makes every rule
# meet that check, and compares the concrete gradients a traced function returns, which a check while
# tracing cannot see where dims are unknown.
GRADIENT_RULES = [n for n in _registry.OP_NAMES
                  if _registry.INFO[n]["differentiable"] and n in _registry.EXAMPLES and n not in RAISING_RULES]
# The callee was traced for [2] float32: a signature with unknown dims does not call it.
FIXED_SIGNATURE_CALLEES = {"PartitionedCall", "If", "StatelessIf", "Case", "StatelessCase", "While",
                           "StatelessWhile"}
# Not done: these gradients need static shapes (FFT*) or fft_length known while tracing (RFFT*, IRFFT*);
# with unknown dims they raise UnimplementedError naming the op, which the sweep asserts.
GRADIENT_NEEDS_STATIC_SHAPES = {"FFT", "IFFT", "FFT2D", "IFFT2D", "FFT3D", "IFFT3D", "RFFT", "IRFFT", "RFFT2D",
                                "IRFFT2D", "RFFT3D", "IRFFT3D"}


def _tensor_args(inputs):
    """The example's tensors in input order (a list input contributes its members)."""
    args = []
    for x in inputs:
        args.extend(x if isinstance(x, list) else [x] if isinstance(x, tf.Tensor) else [])
    return args


def _rebuild(inputs, tensors):
    it = iter(tensors)
    return [next(it) if isinstance(x, tf.Tensor) else [next(it) for _ in x] if isinstance(x, list) else x
            for x in inputs]


def _gradients_of_example(name, tensors):
    """d(sum of each differentiable output times fixed weights)/d(each float or complex input)."""
    inputs, attrs = _registry.EXAMPLES[name]
    watched = [k for k, t in enumerate(tensors) if t.dtype.is_floating or t.dtype.is_complex]
    with tf.GradientTape() as tape:
        for k in watched:
            tape.watch(tensors[k])
        out = _C.op(name)(*_rebuild(inputs, tensors), *attrs)
        outs = [o for o in (out if isinstance(out, tuple) else (out,)) if o.dtype.is_floating or o.dtype.is_complex]
        total = tf.constant(0.0, tf.float32)
        for j, o in enumerate(outs):
            weights = tf.cast(tf.cos(tf.cast(tf.range(tf.size(o)), tf.float32) + float(j)), o.dtype)
            term = tf.reduce_sum(tf.reshape(o, [-1]) * weights)
            total += tf.cast(tf.math.real(term) if o.dtype.is_complex else term, tf.float32)
    grads = tape.gradient(total, [tensors[k] for k in watched])
    return dict(zip(watched, grads))


def _assert_fits(name, how, tensors, grads):
    for k, g in grads.items():
        if g is None:
            continue
        x = tensors[k]
        assert g.dtype == x.dtype, f"{name} ({how}): input {k} is {x.dtype.name}, its gradient {g.dtype.name}"
        assert g.shape == x.shape, f"{name} ({how}): input {k} is {x.shape}, its gradient {g.shape}"


@pytest.mark.parametrize("name", GRADIENT_RULES)
def test_every_gradient_has_its_inputs_shape_and_dtype(name):
    tensors = _tensor_args(_registry.EXAMPLES[name][0])
    eager = _gradients_of_example(name, tensors)
    _assert_fits(name, "eager", tensors, eager)
    # Traced, the watched tensors are arguments and the others (axes, shapes, ...) constants; with unknown
    # dims every tensor is an argument, so the rules meet shape operands as values computed in the graph.
    arguments = {"traced": sorted(eager), "traced with unknown dims": list(range(len(tensors)))}
    specs = {"traced": lambda t: tf.TensorSpec(t.shape, t.dtype),
             "traced with unknown dims": lambda t: tf.TensorSpec([None] * t.shape.rank, t.dtype)}
    for how in arguments if name not in FIXED_SIGNATURE_CALLEES else ["traced"]:
        positions = arguments[how]

        def staged(*args, positions=positions):
            operands = list(tensors)
            for k, a in zip(positions, args):
                operands[k] = a
            grads = _gradients_of_example(name, operands)
            return [grads.get(k) for k in range(len(tensors))]

        signature = [specs[how](tensors[k]) for k in positions]
        if name == "SplitV" and how == "traced with unknown dims":  # size_splits' length: the number of outputs
            signature[1] = tf.TensorSpec(tensors[1].shape, tensors[1].dtype)
        args = [tensors[k] for k in positions]
        if how == "traced with unknown dims" and name in GRADIENT_NEEDS_STATIC_SHAPES:
            with pytest.raises(errors.UnimplementedError, match=name):
                tf.function(staged, input_signature=signature)(*args)
            continue
        got = tf.function(staged, input_signature=signature)(*args)
        graph = {k: g for k, g in enumerate(got) if k in eager}
        assert {k for k, g in graph.items() if g is not None} == {k for k, g in eager.items() if g is not None}, \
            f"{name} ({how}): gradients for other inputs than eagerly"
        _assert_fits(name, how, tensors, graph)


def _layout_and_broadcast_variants():
    """More calls of the ops whose rules depend on a layout, a broadcast or an inference flag (an NHWC batch
    norm's rule once returned its two outputs swapped): (name, inputs, attrs), float32."""
    rng = np.random.default_rng(1)

    def f(*shape):
        return tf.constant(rng.uniform(0.5, 1.5, size=shape).astype(np.float32))

    cases = [(name, inputs, attrs) for name, calls in conv_op_examples.variants(f).items()
             for inputs, attrs in calls]
    c, none = 5, tf.constant([], tf.float32)
    for fmt, shape in (("NHWC", (2, 3, 4, c)), ("NCHW", (2, c, 3, 4))):
        for training in (True, False):
            cases += [("FusedBatchNormV3", [f(*shape), f(c), f(c), f(c), f(c)], [0.001, 1.0, fmt, training]),
                      ("_FusedBatchNormEx", [f(*shape), f(c), f(c), f(c), f(c)], [0.001, 1.0, fmt, training, "Relu"]),
                      ("FusedBatchNormGradV3", [f(*shape), f(*shape), f(c), f(c), f(c), none], [0.001, fmt, training])]
    cases += [("BiasAdd", [f(2, 3, 4), f(3)], ["NCHW"]), ("BiasAdd", [f(2, 3, 4, 5), f(3)], ["NCHW"]),
              ("BiasAddGrad", [f(2, 3, 4, 5)], ["NCHW"]),
              ("Conv2D", [f(2, 3, 5, 6), f(3, 2, 3, 4)], conv_op_examples._conv2d_attrs(fmt="NCHW")),
              ("MaxPool", [f(2, 3, 5, 6)], [[1, 1, 3, 2], [1, 1, 2, 2], "SAME", [], "NCHW"]),
              ("AvgPool", [f(2, 3, 5, 6)], [[1, 1, 3, 2], [1, 1, 2, 2], "VALID", "NCHW"])]
    for name in _registry.BINARY_NUMERIC:
        if _registry.INFO[name]["differentiable"]:
            for a, b in (((2, 3), (3,)), ((2, 1), (1, 3)), ((), (2, 3)), ((4, 2, 3), (2, 1))):
                cases.append((name, [f(*a), f(*b)], []))
    return cases


VARIANTS = _layout_and_broadcast_variants()


@pytest.mark.parametrize("case", range(len(VARIANTS)), ids=[f"{n}-{i}" for i, (n, _, _) in enumerate(VARIANTS)])
def test_gradients_of_layout_and_broadcast_variants_have_their_inputs_shape_and_dtype(case, monkeypatch):
    name, inputs, attrs = VARIANTS[case]
    monkeypatch.setitem(_registry.EXAMPLES, name, (inputs, attrs))
    test_every_gradient_has_its_inputs_shape_and_dtype(name)


# Each float dtype an op's kernels declare, eagerly (a rule's constants and casts must follow the input's
# dtype; float32 is the sweep above). A call the op does not take in that dtype (a float32 operand beside
# others of fixed dtype) is left out: the op rejects it before any gradient.
def _cast_example(name, dtype):
    inputs, attrs = _registry.EXAMPLES[name]
    tensors = [tf.cast(t, dtype) if t.dtype == tf.float32 else t for t in _tensor_args(inputs)]
    return inputs, attrs, tensors


def _takes(name, dtype):
    """Whether the op takes the call in `dtype` and returns a value gradients flow from (Cast to int32 does not)."""
    inputs, attrs, tensors = _cast_example(name, dtype)
    try:
        out = _C.op(name)(*_rebuild(inputs, tensors), *attrs)
    except (errors.InvalidArgumentError, TypeError):
        return False
    return any(o.dtype.is_floating or o.dtype.is_complex for o in (out if isinstance(out, tuple) else (out,)))


DTYPE_CASES = [(name, d) for name in GRADIENT_RULES for d in (tf.float64, tf.float16, tf.bfloat16)
               if d._enum in _registry.INFO[name]["kernel_dtypes"]
               and any(t.dtype == tf.float32 for t in _tensor_args(_registry.EXAMPLES[name][0])) and _takes(name, d)]


@pytest.mark.parametrize("name,dtype", DTYPE_CASES, ids=[f"{n}-{d.name}" for n, d in DTYPE_CASES])
def test_gradients_in_every_float_dtype_have_their_inputs_dtype(name, dtype):
    _, _, tensors = _cast_example(name, dtype)
    grads = _gradients_of_example(name, tensors)
    assert any(g is not None for g in grads.values()), f"{name} ({dtype.name}): no gradient at all"
    _assert_fits(name, f"eager {dtype.name}", tensors, grads)
